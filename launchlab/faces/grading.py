"""Grading the lab: the learner copy generated from the instructor's master with otter-grader's `otter assign`,
and a folder of submissions graded in two steps into a CSV.

    master    lab_solutions/09_lab_audit.ipynb  -- solutions, public and hidden tests (otter's assign format)
    learner   notebooks/09_lab_audit.ipynb      -- what `otter assign` makes of the master, executed in replay
    tests     lab_solutions/lab_tests.py        -- the hidden tests and the reference values, instructor side

    python -m launchlab grade DIR [--out build/grade] [--jobs 2] [--timeout 120] [--no-sandbox]
    make grade SUBMISSIONS=DIR

Step 1, the submission: each notebook runs as its own copy inside bubblewrap (launchlab.faces.sandbox): the
course tree read-only, the instructor's files, the other submissions and the network out of sight, a scrubbed
environment, a time limit per cell and every process it started killed after (launchlab.faces.collect). It
hands back only its answers, as plain JSON values. Step 2, the grade: the instructor's tests score those
values against reference values computed here, in the grader's own process, which no learner code ever ran
in. Each question is scored from its own answers, so an error or a hang costs its step (and the steps that use
its result), not the notebook; numbers pass within a stated relative tolerance. Out come `grades.csv`
(learner, points per question, total, possible, status), `feedback/<learner>.txt` (every lost point with what
failed and why, the learner's own exception with its step, a missing name named) and `report/<learner>.txt`
(every check, and the answers as read). Where bubblewrap is missing or refused, grading refuses untrusted work
unless `--no-sandbox` says the submissions are trusted.

The grader's own tests: FIXTURES (wrong submissions, each losing exactly its points) and CHEATS (submissions
that patch the grader or the library, read the instructor's files or other submissions, rewrite the tests,
answer with always-equal objects -- each must score 0 -- and hard honest cases: a hang in step 5, a notebook
without otter's metadata, the right values typed in). `grade --benchmark 30` grades them all, timed.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from launchlab import sections
from launchlab.core import paths
from launchlab.faces import course, sandbox

ROOT = paths.ROOT
# The graded lab's files, from the section whose manifest declares a graded lab (launchlab.sections)
_LAB = next(s for s in sections.all() if s.graded)
MASTER = Path(_LAB.graded["master"])
LEARNER = Path(_LAB.graded["learner"])


class GradingError(RuntimeError):
    pass


def otter_available() -> bool:  # pragma: no mutate block (not scoring)
    try:
        import otter  # noqa: F401
    except ImportError:
        return False
    return True


def _env() -> dict:  # pragma: no mutate block (not scoring)
    return dict(os.environ, LAUNCHLAB_MODE="replay", PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]))


@dataclass
class Assigned:
    student: Path            # the learner notebook otter made
    autograder: Path         # the solutions notebook with every test
    zip: Path                # what the grader runs


def assign(out: Path, master: Path = MASTER) -> Assigned:  # pragma: no mutate block (not scoring)
    """`otter assign` on the master into `out` (emptied first); runs the master's tests against its solutions."""
    if not otter_available():
        raise GradingError("otter-grader is not installed: `make grade` installs it (pip install -e .[grade])")
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([sys.executable, "-m", "otter", "assign", str(master), str(out)], capture_output=True,
                       text=True, env=_env(), cwd=master.parent, timeout=900)
    zips = sorted((out / "autograder").glob("*.zip"))
    if p.returncode != 0 or not zips:
        raise GradingError(f"otter assign failed ({p.returncode}): {(p.stderr or p.stdout)[-1500:]}")
    return Assigned(out / "student" / master.name, out / "autograder" / master.name, zips[-1])


def comparable(nb_path: Path) -> dict:  # pragma: no mutate block (not scoring)
    """What must not drift between the committed learner copy and otter's: every cell's type, source and
    otter's locks, and the embedded public tests. Outputs and execution counts are the course's (replay)."""
    nb = json.loads(Path(nb_path).read_text())
    cells = [{"type": c["cell_type"], "source": "".join(c["source"]),
              "locked": [c["metadata"].get(k) for k in ("deletable", "editable")],
              "tags": c["metadata"].get("tags", [])} for c in nb["cells"]]
    return {"cells": cells, "otter": nb["metadata"].get("otter")}


def drift(committed: Path = LEARNER, generated: Path | None = None) -> list[str]:  # pragma: no mutate block (not scoring)
    """Differences between the committed learner notebook and what `otter assign` generates now."""
    with tempfile.TemporaryDirectory() as d:
        gen = generated or assign(Path(d) / "dist").student
        a, b = comparable(committed), comparable(gen)
    out = []
    if a["otter"] != b["otter"]:
        out.append("the embedded tests (metadata.otter) differ")
    if len(a["cells"]) != len(b["cells"]):
        out.append(f"{len(a['cells'])} cells committed, {len(b['cells'])} generated")
    for i, (x, y) in enumerate(zip(a["cells"], b["cells"])):
        if x != y:
            out.append(f"cell {i} differs: committed {x['source'][:60]!r} vs generated {y['source'][:60]!r}")
    return out


def refresh_learner() -> Path:  # pragma: no mutate block (not scoring)
    """Regenerate notebooks/09 from the master and execute it in replay (the committed outputs)."""
    with tempfile.TemporaryDirectory() as d:
        a = assign(Path(d) / "dist")
        shutil.copy(a.student, LEARNER)
    course.refresh([LEARNER.stem[:2]])
    return LEARNER


# ------------------------------------------------------------------ step 2: the instructor's tests
TESTS = ROOT / "lab_solutions" / "lab_tests.py"
FIXTURES_FILE = ROOT / "lab_solutions" / "lab_fixtures.py"


def _instructor(path: Path, name: str):
    import importlib.util
    if not path.exists():
        raise GradingError(f"{path} is not here: grading needs the instructor's tree, not a learner release")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tests():
    """The hidden tests and the reference arithmetic, loaded from the instructor's tree (never a learner's)."""
    return _instructor(TESTS, "lab_solutions.lab_tests")


def reference():
    """The lab's reference answers, the audit's arithmetic done right (the instructor's tree)."""
    return _instructor(ROOT / "lab_solutions" / "lab_reference.py", "lab_solutions.lab_reference")


def fixtures():
    """The grader's own test submissions: wrong answers, cheats and hard cases (the instructor's tree)."""
    return _instructor(FIXTURES_FILE, "lab_solutions.lab_fixtures")


def answer_names(t) -> list[str]:
    return sorted({n for names in t.ANSWERS.values() for n in names})


# ------------------------------------------------------------------ step 1: the submission, sandboxed
def collect(submission: Path, work: Path, names: list[str], sandboxed: bool, cell_timeout: float,
            total_timeout: float, hide: tuple[Path, ...] = ()) -> dict | str:  # pragma: no mutate block (not scoring)
    """Run the submission (a copy in `work`) and read its answers: the collected JSON, or why there is none."""
    import signal
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(submission, work / "submission.ipynb")
    argv = [sys.executable, "-m", "launchlab.faces.collect", "submission.ipynb", "answers.json", *names,
            "--cell-timeout", str(cell_timeout)]
    if sandboxed:
        cmd, cwd, env = sandbox.command(work, argv, hide), None, None
    else:                                   # told to go ahead without a sandbox: still its own process and env
        cmd, cwd = argv, work
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(work), "LAUNCHLAB_MODE": "replay",
               "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        _, err = p.communicate(timeout=total_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return f"timeout after {total_timeout:.0f} s in all"
    out = work / "answers.json"
    if not out.exists():
        return f"the notebook could not be run ({(err or '').strip().splitlines()[-1:] or ['no message']})"
    try:
        return json.loads(out.read_text())
    except ValueError:
        return "the submission's answers could not be read"


@dataclass
class Graded:
    learner: str
    points: dict = field(default_factory=dict)       # question -> points earned
    possible: dict = field(default_factory=dict)     # question -> points possible
    status: str = "ok"                               # ok, not a notebook, timeout ..., the notebook could not be run
    feedback: str = ""                               # for the learner: every lost point, with why
    report: str = ""                                 # for the instructor: the same, every check, the raw answers
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.points.values())

    @property
    def out_of(self) -> float:
        return sum(self.possible.values())


def _plain_answers(collected: dict) -> tuple[dict, dict]:
    """(name -> plain value, name -> why it is missing) from the collected JSON (anything odd: missing)."""
    values, missing = {}, {}
    for name, v in (collected.get("answers") or {}).items():
        if isinstance(v, dict) and "value" in v:
            values[name] = v["value"]
        else:
            missing[name] = str(v.get("__missing__", "not an answer")) if isinstance(v, dict) else "not an answer"
    return values, missing


def score(collected: dict | str, ref: dict, t, learner: str = "") -> Graded:
    """Step 2: the instructor's tests over the collected answers, in this (the grader's) process."""
    g = Graded(learner, possible={q: float(p) for q, p in t.POINTS.items()})
    if isinstance(collected, str):
        g.status = collected
        collected = {}
    values, missing = _plain_answers(collected)
    names = answer_names(t)
    for n in names:
        if n not in values and n not in missing:
            missing[n] = "not defined (the notebook stopped before it, or never assigned it)"
    events = collected.get("events", [])
    checks = t.score({n: values.get(n) for n in names}, ref)
    fb, rep = [], []
    for q in t.QUESTIONS:
        got = sum(p for p, ok, _ in checks[q] if ok)
        g.points[q] = float(got)
        lines = [f"{q}: {got:g} / {t.POINTS[q]:g}"]
        if got < t.POINTS[q]:
            for n in t.ANSWERS[q]:
                if n in missing:
                    lines.append(f"  `{n}` {missing[n]}")
            for e in events:
                if e.get("step") == q:
                    lines.append(f"  your cell raised {e['error']}: {e['message']}" if e["error"] != "timeout"
                                 else f"  a cell of this step {e['message']}")
            lines += [f"  lost {p:g}: {msg}" for p, ok, msg in checks[q] if not ok]
        fb += lines
        rep += lines + [f"  {'passed' if ok else 'FAILED'} ({p:g}): {msg}" for p, ok, msg in checks[q]]
    g.feedback = "\n".join(fb)
    g.report = "\n".join(rep) + "\n\nanswers: " + json.dumps(values)[:4000]
    return g


def grade_one(submission: Path, ref: dict, t, sandboxed: bool, cell_timeout: float = 120,
              total_timeout: float = 600, hide: tuple[Path, ...] = ()) -> Graded:  # pragma: no mutate block (not scoring)
    """One submission: run it in the sandbox for its answers, then score them here."""
    submission = Path(submission)
    t0 = time.perf_counter()
    try:
        json.loads(submission.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        collected: dict | str = "not a notebook"
    else:
        with tempfile.TemporaryDirectory(prefix="launchlab-grade-") as d:
            collected = collect(submission, Path(d) / "work", answer_names(t), sandboxed, cell_timeout,
                                total_timeout, hide)
    g = score(collected, ref, t, submission.stem)
    g.seconds = time.perf_counter() - t0
    return g


def grade_folder(folder: Path, out: Path = ROOT / "build" / "grade", jobs: int = 2, timeout: float = 120,
                 sandboxed: bool | None = None) -> tuple[Path, list[Graded], float]:  # pragma: no mutate block (not scoring)
    """Grade every *.ipynb in `folder`: grades.csv, feedback/<learner>.txt and report/<learner>.txt under `out`;
    (csv, rows, seconds). `timeout` is per cell. Each submission runs in the sandbox (launchlab.faces.sandbox);
    where there is none, grading refuses unless `sandboxed=False` says to go ahead without one."""
    folder, out = Path(folder), Path(out)
    subs = sorted(folder.glob("*.ipynb"))
    if not subs:
        raise GradingError(f"no *.ipynb submissions in {folder}")
    why = sandbox.available()
    if sandboxed is None:
        if why:
            raise GradingError(f"no sandbox for untrusted work here ({why}); grade without one only for "
                               f"submissions you trust: python -m launchlab grade DIR --no-sandbox")
        sandboxed = True
    elif sandboxed and why:
        raise GradingError(f"no sandbox here: {why}")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    t = tests()
    ref = t.references()
    hide = (folder.resolve(), out.resolve())
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        rows = list(ex.map(lambda sub: grade_one(sub, ref, t, sandboxed, timeout, max(600.0, 4 * timeout), hide),
                           subs))
    seconds = time.perf_counter() - t0
    QUESTIONS = tuple(t.QUESTIONS)
    possible = next((r.possible for r in rows if r.possible), {})
    csv_path = out / "grades.csv"
    with csv_path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["learner", *QUESTIONS, "total", "possible", "status"])
        for r in rows:
            w.writerow([r.learner, *(f"{r.points.get(q, 0.0):g}" for q in QUESTIONS), f"{r.total:g}",
                        f"{sum(possible.values()):g}", r.status])
    fb, rep = out / "feedback", out / "report"
    fb.mkdir(exist_ok=True)
    rep.mkdir(exist_ok=True)
    for r in rows:
        head = (f"{r.learner}: {r.total:g} / {sum(possible.values()):g} ({r.status})\n"
                + "".join(f"  {q}: {r.points.get(q, 0.0):g} / {possible.get(q, 0.0):g}\n" for q in QUESTIONS))
        (fb / f"{r.learner}.txt").write_text(f"{head}\n{r.feedback}\n")
        (rep / f"{r.learner}.txt").write_text(f"{head}\n{r.report}\n")
    return csv_path, rows, seconds


REPORT = Path(_LAB.graded["report"])


def _tree_digest() -> str:  # pragma: no mutate block (not scoring)
    """One sha256 over the course tree a submission must not change (package, instructor files, recordings)."""
    import hashlib
    h = hashlib.sha256()
    for top in ("launchlab", "lab_solutions", "kernels", "data/recordings"):
        for f in sorted((ROOT / top).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(ROOT)).encode() + f.read_bytes())
    return h.hexdigest()


def benchmark(n: int = 30, jobs: int = 2, out: Path = ROOT / "build" / "grade-benchmark",
              report: Path = REPORT, sandboxed: bool | None = None, cell_timeout: float = 20) -> dict:  # pragma: no mutate block (not scoring)
    """Grade n submissions -- the master's solutions, the blank learner copy, every wrong fixture and every
    cheat, cycled -- as `make grade` would (assign included), timed on this machine; then one blank more, graded
    after all of them, and the course tree compared with before (did any submission reach a later one?). The
    result is written to `report`."""
    import platform
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    subs = out / "submissions"
    subs.mkdir(parents=True)
    before = _tree_digest()
    t0 = time.perf_counter()
    a = assign(out / "dist")
    ref = tests().references()
    fx = fixtures()
    FIXTURES, CHEATS, CHEATING = fx.FIXTURES, fx.CHEATS, fx.CHEATING
    kinds = ["master", "blank", *FIXTURES, *CHEATS]
    for i in range(n):
        kind = kinds[i % len(kinds)]
        dst = subs / f"learner{i:02d}_{kind}.ipynb"
        if kind == "master":
            shutil.copy(a.autograder, dst)
        elif kind == "blank":
            shutil.copy(LEARNER, dst)
        elif kind in FIXTURES:
            fx.make_fixture(a.autograder, kind, dst)
        else:
            fx.make_cheat(kind, LEARNER, a.autograder, dst, ref)
    _, rows, _ = grade_folder(subs, out / "graded", jobs, cell_timeout, sandboxed=sandboxed)
    seconds = time.perf_counter() - t0
    after = out / "after"
    after.mkdir()
    shutil.copy(LEARNER, after / "blank_after_all.ipynb")
    _, last, _ = grade_folder(after, out / "graded-after", 1, cell_timeout, sandboxed=sandboxed)
    by = {}
    for r in rows:
        by.setdefault(r.learner.split("_", 1)[1], r)
    QUESTIONS = tuple(tests().QUESTIONS)
    possible = sum(next(r.possible for r in rows if r.possible).values())
    full = by["master"].points
    pct = {k: 100 * by[k].total / possible for k in CHEATS if k in by}
    rep = {"submissions": n, "jobs": jobs, "cpus": os.cpu_count(), "seconds": round(seconds, 1),
           "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "sandbox": "none" if sandboxed is False else "bubblewrap", "cell_timeout_s": cell_timeout,
           "possible": possible,
           "master_score_pct": 100 * by["master"].total / possible,
           "blank_score_pct": 100 * by["blank"].total / possible,
           "statuses": sorted({r.status for r in rows}),
           "fixtures": {k: {"expected_lost": FIXTURES[k][2],
                            "lost": {q: full[q] - by[k].points[q] for q in QUESTIONS if full[q] != by[k].points[q]}}
                        for k in FIXTURES},
           "cheats": {k: {"deserves": CHEATS[k][3], "got": by[k].total if k in by else None} for k in CHEATS},
           "cheat_max_score_pct": max(pct[k] for k in CHEATING if k in pct),
           "poison_isolated": last[0].total == 0 and _tree_digest() == before,
           "hang_partial_credit": ("hang_in_step_5" in by and by["hang_in_step_5"].total == CHEATS["hang_in_step_5"][3]
                                   and by["hang_in_step_5"].points["q5"] == 0)}
    Path(report).parent.mkdir(parents=True, exist_ok=True)
    Path(report).write_text(json.dumps(rep, indent=1) + "\n")
    return rep


def main(argv=None) -> int:  # pragma: no mutate block (not scoring)
    import argparse
    ap = argparse.ArgumentParser(prog="python -m launchlab grade")
    ap.add_argument("folder", nargs="?")
    ap.add_argument("--out", default=str(ROOT / "build" / "grade"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120, help="seconds per cell (a cell past it is stopped)")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="grade without bubblewrap: only for submissions you trust (see launchlab.faces.sandbox)")
    ap.add_argument("--benchmark", type=int, default=0, metavar="N",
                    help="grade N made-up submissions (solutions, blank, wrong ones), time it, write "
                         "data/grading/report.json")
    a = ap.parse_args(argv)
    if a.benchmark:
        print(json.dumps(benchmark(a.benchmark, a.jobs, sandboxed=False if a.no_sandbox else None), indent=1))
        return 0
    if not a.folder:
        ap.error("give a folder of submitted notebooks (or --benchmark N)")
    try:
        path, rows, secs = grade_folder(Path(a.folder), Path(a.out), a.jobs, a.timeout,
                                        sandboxed=False if a.no_sandbox else None)
    except GradingError as e:
        print(f"grade: {e}", file=sys.stderr)
        return 2
    print(path.read_text())
    print(f"{len(rows)} submissions graded in {secs:.1f} s ({a.jobs} at a time); feedback in {Path(a.out) / 'feedback'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
