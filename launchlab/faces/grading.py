"""Grading the lab: the learner copy generated from the instructor's master with otter-grader's `otter assign`,
and a folder of submissions graded in two steps into a CSV.

    master    lab_solutions/09_lab_audit.ipynb  -- solutions, public and hidden tests (otter's assign format)
    learner   notebooks/09_lab_audit.ipynb      -- what `otter assign` makes of the master, executed in replay
    tests     lab_solutions/lab_tests.py        -- the hidden tests and the reference values, instructor side

    python -m launchlab grade DIR [--out build/grade] [--jobs 2] [--timeout 120] [--no-sandbox]
    make grade SUBMISSIONS=DIR

Each submission, in four steps, none of which can take the run down or reach another learner's row:
  intake    (launchlab.faces.intake) taken only as a regular file of bounded size and JSON depth, opened without
            following a link: a symlink, FIFO, device or hard link to elsewhere is refused with the reason
  run       (launchlab.faces.runner) its own copy inside bubblewrap (launchlab.faces.sandbox) as an unprivileged
            user with no capability, under limits (launchlab.faces.confine: cgroups where the machine has
            them, rlimits always); the collector (launchlab.faces.collect) sends its answers, as plain JSON
            values, after each step over a pipe, so a timeout loses only the steps after it
  score     the instructor's tests over those values in a process of their own under a time limit
            (launchlab.faces.scoring), against reference values computed here; numbers pass within a stated
            relative tolerance, and nothing is given without knowledge (lab_solutions/lab_tests.py)
  record    its row in grades.csv as soon as it is done (launchlab.faces.gradebook; spreadsheet-safe), its
            feedback/<learner>.txt (every lost point with what failed and why, its own exception with its step),
            report/<learner>.txt (every check, the answers as read) and report/<learner>.log (what it printed)
Any exception, timeout or malformed answer is that submission's status, with 0 for what could not be read.
Before anyone is graded, a one-cell notebook runs the same way (runner.preflight): a sandbox that cannot start a
kernel stops the run (non-zero, no grades) instead of grading everyone 0. Where bubblewrap is missing or
refused, grading refuses untrusted work unless `--no-sandbox` says the submissions are trusted.

The grader's own tests (lab_solutions/lab_fixtures.py): FIXTURES (wrong submissions, each losing exactly its
points), CHEATS (submissions that patch the grader or the library, read the instructor's files or other
submissions, rewrite the tests, answer with always-equal objects -- each must score 0 -- and hard honest cases)
and ATTACKS (escape, crash, hang, flood, starve or score without knowledge, each with what it deserves, graded
as root beside honest neighbours). `grade --benchmark 30` grades the first two kinds, timed, then the attacks.
"""
from __future__ import annotations

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
from launchlab.core import mode, paths, provenance
from launchlab.faces import confine, course, gradebook, intake, rerun, runner, sandbox, scan

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
    otter's locks, and the embedded public tests. Outputs and execution counts are the course's (replay), and so
    are the tags course.normalize adds (an unrun check's nbval-ignore-output)."""
    nb = json.loads(Path(nb_path).read_text())
    cells = [{"type": c["cell_type"], "source": "".join(c["source"]),
              "locked": [c["metadata"].get(k) for k in ("deletable", "editable")],
              "tags": [t for t in c["metadata"].get("tags", []) if t not in course.NORMALIZE_TAGS]}
             for c in nb["cells"]]
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


# ------------------------------------------------------------------ step 2 in a process of its own, and the class
SCORING_SECONDS = 60.0          # step 2 for one submission, all questions (an honest one takes well under 1 s)
SCORING_BYTES = 1 << 20         # what is kept of its output: a JSON line per question (an honest one: ~3 KB)


def _plain_answers(collected) -> tuple[dict, dict]:
    """(name -> plain value, name -> why it is missing) from the collected answers, whatever shape they came in
    (the submission can write to the channel: a list, a number, a name that is not asked -- anything odd is
    missing, never an error)."""
    values, missing = {}, {}
    answers = collected.get("answers") if isinstance(collected, dict) else None
    for name, v in (answers.items() if isinstance(answers, dict) else ()):
        if isinstance(v, dict) and "value" in v:
            values[name] = v["value"]
        else:
            missing[name] = str(v.get("__missing__", "not an answer"))[:200] if isinstance(v, dict) else "not an answer"
    return values, missing


@dataclass
class Graded:
    learner: str
    points: dict = field(default_factory=dict)       # question -> points earned
    possible: dict = field(default_factory=dict)     # question -> points possible
    status: str = "ok"                               # ok, not a notebook, refused: ..., timeout ..., ...
    feedback: str = ""                               # for the learner: every lost point, with why
    report: str = ""                                 # for the instructor: the same, every check, the raw answers
    seconds: float = 0.0
    log: bytes = b""                                 # what the submission printed (capped)
    rerun: dict | None = None                        # the grader's re-run of steps 6-7 (launchlab.faces.rerun)

    @property
    def total(self) -> float:
        return sum(self.points.values())

    @property
    def out_of(self) -> float:
        return sum(self.possible.values())


def checks_isolated(values: dict, ref: dict, timeout: float = SCORING_SECONDS) -> dict:  # pragma: no mutate block (not scoring)
    """The instructor's tests over `values` in a process of their own (launchlab/faces/scoring.py) under a time
    and memory limit: a question whose checks do not finish in time fails them, saying so; the grader waits for
    no answer longer than `timeout` in all."""
    t = tests()
    conf = confine.Confinement(sandbox.Limits(address_space_bytes=4096 << 20, cpu_seconds=int(timeout) + 5),
                               use_cgroups=False)
    job = json.dumps({"tests": str(TESTS), "answers": values, "ref": ref}).encode()
    mem = os.memfd_create("scoring-job", 0)
    os.write(mem, job)
    os.lseek(mem, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    try:
        p = subprocess.Popen(conf.wrap([sys.executable, "-I", str(Path(__file__).with_name("scoring.py"))]),
                             stdin=mem, stdout=out_w, stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(out_w)
        out_w = None
        got, _ = runner.drain(p, {out_r: SCORING_BYTES}, time.monotonic() + timeout, grace=1.0)
        p.kill()
        p.wait()
    finally:
        for fd in (mem, out_r, out_w):
            if fd is not None:
                os.close(fd)
    out: dict = {}
    for line in got[out_r][0].splitlines():
        try:
            got_q = json.loads(line)
            out[got_q["q"]] = [(float(pt), bool(ok), str(msg)) for pt, ok, msg in got_q["checks"]]
        except (ValueError, KeyError, TypeError):
            continue
    for q in t.QUESTIONS:
        if q not in out:
            out[q] = [(float(t.POINTS[q]), False, f"scoring {q} did not finish within {timeout:.0f} s "
                                                  f"(an answer built to be slow to check)")]
    return out


def score(collected, ref: dict, t, learner: str = "", check=None, rerun_facts: dict | None = None) -> Graded:
    """Step 2: the instructor's tests over the collected answers (a runner.Collected, or its {"answers",
    "events"} as a dict; a str is why there are none), by `check(answers, ref)` -- the grader passes
    checks_isolated, a process of their own under a time limit -- or here, by t.score. `rerun_facts` is what
    the grader's re-run of steps 6-7 found (launchlab.faces.rerun): it reaches the tests under t.RERUN, a name
    no learner's variable can take."""
    g = Graded(learner, possible={q: float(p) for q, p in t.POINTS.items()})
    if isinstance(collected, runner.Collected):
        g.status, g.log = collected.status, collected.log
        collected = {"answers": collected.answers, "events": collected.events}
    elif isinstance(collected, str):
        g.status, collected = collected, {}
    names = answer_names(t)
    values, missing = _plain_answers(collected)
    values = {n: v for n, v in values.items() if n in names}
    for n in names:
        if n not in values and n not in missing:
            missing[n] = "not defined (the notebook stopped before it, or never assigned it)"
    answers = {n: values.get(n) for n in names}
    if hasattr(t, "RERUN"):
        answers[t.RERUN] = rerun_facts
    checks = (t.score if check is None else check)(answers, ref)
    fb, rep = [], []
    for q in t.QUESTIONS:
        got = sum(p for p, ok, _ in checks[q] if ok)
        g.points[q] = float(got)
        lines = [f"{q}: {got:g} / {t.POINTS[q]:g}"]
        if got < t.POINTS[q]:
            for n in t.ANSWERS[q]:
                if n in missing:
                    lines.append(f"  `{n}` {missing[n]}")
            events = collected.get("events") if isinstance(collected.get("events"), list) else []
            for e in (e for e in events if isinstance(e, dict)):
                if e.get("step") == q:
                    err, msg = str(e.get("error", ""))[:80], str(e.get("message", ""))[:300]
                    lines.append(f"  your cell raised {err}: {msg}" if err not in ("timeout", "contended")
                                 else f"  a cell of this step {msg}")
            lines += [f"  lost {p:g}: {msg}" for p, ok, msg in checks[q] if not ok]
        fb += lines
        rep += lines + [f"  {'passed' if ok else 'FAILED'} ({p:g}): {msg}" for p, ok, msg in checks[q]]
    # every line as a terminal shows it: a learner's message that holds ESC, CR or a newline of its own moves nothing
    g.feedback = "\n".join(gradebook.visible(line) for line in fb)
    g.report = "\n".join(gradebook.visible(line) for line in rep) + "\n\nanswers: " + json.dumps(values)[:4000]
    return g


def rerun_or_why(data: bytes, sandboxed: bool, gpu: bool = False, measurer=None) -> dict:  # pragma: no mutate block (not scoring)
    """The re-run of steps 6-7 (launchlab.faces.rerun); whatever goes wrong is its status, never an exception."""
    try:
        return rerun.facts(data, sandboxed, gpu, measurer)
    except Exception as e:                   # noqa: BLE001 - one submission's failure is that submission's
        return {"status": f"the grader could not re-run steps 6-7 ({type(e).__name__}: {str(e)[:200]})",
                "widths": {}, "arms": {}, "order": None, "blocks_at_n": None, "gpu": None}


def grade_one(submission: Path, ref: dict, t, sandboxed: bool, cell_timeout: float = 120,
              total_timeout: float = 600, links_here: int = 1,
              limits: sandbox.Limits = sandbox.LIMITS, gpu: bool = False,
              measurer=None) -> Graded:  # pragma: no mutate block (not scoring)
    """One submission: taken as a file (intake), run in the sandbox for its answers, scored apart. Whatever goes
    wrong with it -- an exception anywhere, a timeout, answers that are not answers -- is its own row's status,
    with 0 for what could not be read; it never reaches another submission's row."""
    submission = Path(submission)
    t0 = time.perf_counter()
    learner = submission.name[:-len(".ipynb")] if submission.name.endswith(".ipynb") else submission.name
    try:
        data = intake.intake(submission, links_here)
        why = data if isinstance(data, str) else intake.notebook_or_why(data)
        if why:
            g = score(why, ref, t, learner)
        else:
            collected = runner.collect(data, answer_names(t), sandboxed, cell_timeout, total_timeout, limits)
            facts = (None if collected.status.startswith("not a notebook")        # said from inside: no re-run
                     else rerun_or_why(data, sandboxed, gpu, measurer))
            g = score(collected, ref, t, learner, check=checks_isolated, rerun_facts=facts)
            g.rerun = facts
    except Exception as e:                   # noqa: BLE001 - one submission's failure is that submission's
        g = score(f"the grader could not grade it ({type(e).__name__}: {str(e)[:200]})", ref, t, learner)
    g.seconds = time.perf_counter() - t0
    return g


def limits_here(limits: sandbox.Limits = sandbox.LIMITS) -> tuple[list[tuple[str, bool]], bool]:  # pragma: no mutate block (not scoring)
    """Every documented limit and whether it holds on this machine for this user (confine.Confinement.holds), and
    whether memory and processes are bounded as documented."""
    conf = confine.Confinement(limits)
    try:
        return conf.holds(), conf.bounded()
    finally:
        conf.close()


def limits_statement(held: list[tuple[str, bool]]) -> str:
    """What `grade` says before the first submission: each limit, holding or not."""
    return "limits of each submission here:\n" + "".join(
        f"  {'holds' if ok else 'DOES NOT HOLD'}: {text}\n" for text, ok in held)


def grade_folder(folder: Path, out: Path = ROOT / "build" / "grade", jobs: int = 2, timeout: float = 120,
                 sandboxed: bool | None = None, total_timeout: float | None = None,
                 limits: sandbox.Limits = sandbox.LIMITS, gpu: bool = False,
                 accept_weaker_limits: bool | None = None, say=None) -> tuple[Path, list[Graded], float]:  # pragma: no mutate block (not scoring)
    """Grade every *.ipynb in `folder`: grades.csv (written as rows finish), feedback/<learner>.txt and
    report/<learner>.txt (+ .log, what it printed) under `out`; (csv, rows, seconds). `timeout` is per cell,
    `total_timeout` per submission (default max(600, 4 x timeout)). Each submission runs in the sandbox
    (launchlab.faces.sandbox) under limits (launchlab.faces.confine); where there is none, grading refuses
    unless `sandboxed=False` says to go ahead without one, and where the sandbox cannot run a kernel it stops
    before grading anyone."""
    folder, out = Path(folder), Path(out)
    subs = intake.submissions(folder)
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
    held, bounded = limits_here(limits)
    (say or (lambda text: print(text, end="", file=sys.stderr)))(limits_statement(held))
    if accept_weaker_limits is None:
        accept_weaker_limits = os.environ.get(confine.ACCEPT_WEAKER, "") == "1"
    if sandboxed and not bounded and not accept_weaker_limits:
        missing = "; ".join(text for text, ok in held if not ok)
        raise GradingError(f"a submission's memory and processes cannot be bounded here ({missing}): grade "
                           f"untrusted work where cgroups can be made (root, or a delegated cgroup v2), or accept "
                           f"the weaker limits above: python -m launchlab grade DIR --accept-weaker-limits")
    total_timeout = total_timeout or max(600.0, 4 * timeout)
    try:
        runner.preflight(sandboxed, limits=limits)
    except runner.SandboxBroken as e:
        raise GradingError(str(e)) from None
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    t = tests()
    ref = t.references()
    fb, rep = out / "feedback", out / "report"
    fb.mkdir(exist_ok=True)
    rep.mkdir(exist_ok=True)
    sheet = gradebook.Sheet(out / "grades.csv", tuple(t.QUESTIONS))
    measurer = rerun.GpuMeasurer() if gpu else None
    if gpu:
        jobs = 1                             # the grader's own ABBA times one submission's arms at a time

    def one(sub):
        r = grade_one(sub[0], ref, t, sandboxed, timeout, total_timeout, sub[1], limits, gpu, measurer)
        head = (f"{gradebook.visible(r.learner)}: {r.total:g} / {r.out_of:g} ({gradebook.visible(r.status)})\n"
                + "".join(f"  {q}: {r.points.get(q, 0.0):g} / {r.possible.get(q, 0.0):g}\n" for q in t.QUESTIONS))
        name = gradebook.file_name(r.learner)
        (fb / f"{name}.txt").write_text(f"{head}\n{r.feedback}\n")
        (rep / f"{name}.txt").write_text(f"{head}\n{r.report}\n")
        (rep / f"{name}.log").write_text(gradebook.visible(r.log.decode("utf-8", "replace"), newlines=True))
        if r.rerun is not None:
            (rep / f"{name}.rerun.json").write_text(json.dumps(r.rerun, indent=1) + "\n")
        sheet.add(r)
        return r

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        rows = list(ex.map(one, subs))
    sheet.close(rows)
    return out / "grades.csv", rows, time.perf_counter() - t0




REPORT = Path(_LAB.graded["report"])


def _tree_files() -> dict:  # pragma: no mutate block (not scoring)
    """sha256 of every file of the course tree a submission must not change (package, instructor files,
    kernels, recordings), by path."""
    import hashlib
    out = {}
    for top in ("launchlab", "lab_solutions", "kernels", "data/recordings"):
        for f in sorted((ROOT / top).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                out[str(f.relative_to(ROOT))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def _tree_digest() -> str:  # pragma: no mutate block (not scoring)
    """One sha256 over the course tree a submission must not change (_tree_files)."""
    import hashlib
    return hashlib.sha256(json.dumps(_tree_files(), sort_keys=True).encode()).hexdigest()


def benchmark(n: int = 30, jobs: int = 2, out: Path = ROOT / "build" / "grade-benchmark",
              report: Path = REPORT, sandboxed: bool | None = None, cell_timeout: float = 20,
              attack_total_timeout: float = 120) -> dict:  # pragma: no mutate block (not scoring)
    """Grade n submissions -- the master's solutions, the blank learner copy, every wrong fixture and every
    cheat, cycled -- as `make grade` would (assign included), timed on this machine; then one blank more, graded
    after all of them, and the course tree compared with before (did any submission reach a later one?); then
    every attack beside honest neighbours (`attacks`). The result is written to `report`."""
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
           "sandbox": "none" if sandboxed is False else "bubblewrap",
           "sandbox_source": "none" if sandboxed is False else sandbox.source(), "cell_timeout_s": cell_timeout,
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
    rep.update(attacks(a, out / "attacks", jobs, cell_timeout, attack_total_timeout, sandboxed))
    variants = honest(a, out / "honest", jobs, cell_timeout, sandboxed)
    rep["honest"] = variants
    rep["honest_variants"] = len(variants)
    rep["honest_variants_full_marks"] = sum(v["got"] == v["of"] and v["status"] == "ok" for v in variants.values())
    rep["grader_parse_seconds"] = parse_seconds()
    rep["grader_parse_seconds_max"] = max(rep["grader_parse_seconds"].values())
    rep["limits_without_cgroups_measured"] = {"grader_as_root": runner.probe_weaker()}
    if os.geteuid() == 0 and shutil.which("setpriv") and os.access("/usr/bin/python3", os.X_OK):
        rep["limits_without_cgroups_measured"]["grader_as_an_ordinary_user"] = runner.probe_weaker(65534)
    user = rep["limits_without_cgroups_measured"].get("grader_as_an_ordinary_user")
    rep["limits_without_cgroups"] = (user or rep["limits_without_cgroups_measured"]["grader_as_root"])["holds"]
    Path(report).parent.mkdir(parents=True, exist_ok=True)
    Path(report).write_text(json.dumps(rep, indent=1) + "\n")
    return rep


GPU_REPORT = ROOT / "data" / "grading" / "gpu.json"


def _measured(g: dict) -> dict | None:  # pragma: no mutate block (not scoring)
    """The grader's own ABBA of a submission's arms, summarized: medians, gain, spread, its verdict."""
    import statistics
    ab = (g or {}).get("abba")
    if not ab:
        return None
    a = [m for o, m in zip(ab["order"], ab["ms"]) if o == "A"]
    b = [m for o, m in zip(ab["order"], ab["ms"]) if o == "B"]
    gain, spread = statistics.median(b) - statistics.median(a), max(max(a) - min(a), max(b) - min(b))
    return {"order": "".join(ab["order"]), "ms_a": [round(x, 4) for x in a], "ms_b": [round(x, 4) for x in b],
            "gain_ms": round(gain, 4), "spread_ms": round(spread, 4),
            "verdict": "faster" if gain > spread else "slower" if -gain > spread else "no measurable difference"}


def make_gpu_fixtures(folder: Path) -> dict:  # pragma: no mutate block (not scoring)
    """The GPU fixtures as submissions in `folder` (otter assign runs here: a GPU image without otter's extras
    grades a folder made elsewhere): {file stem: fixture name}."""
    folder = Path(folder)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as d:
        a = assign(Path(d) / "dist")
        fx = fixtures()
        names = {}
        for i, kind in enumerate(fx.GPU_FIXTURES):
            dst = folder / f"g{i}_{kind}.ipynb"
            if kind == "right":
                shutil.copy(a.autograder, dst)
            else:
                fx.make_fixture(a.autograder, kind, dst)
            names[dst.stem] = kind
    return names


def gpu_fixtures(out: Path = ROOT / "build" / "grade-gpu", report: Path = GPU_REPORT, cell_timeout: float = 60,
                 sandboxed: bool | None = None, made: Path | None = None) -> dict:  # pragma: no mutate block (live only)
    """`grade --gpu` over the GPU fixtures (lab_fixtures.GPU_FIXTURES: a right fix and each way of getting steps 6-7
    wrong, and one that hangs the GPU, graded in that order in one folder): each graded as a class is, every
    submission re-run live in the sandbox with the GPU's nodes bound, its plan launched between guard words and
    its arms measured by the grader. Whether each lost exactly what it deserves is written to `report`."""
    import platform
    mode.require_live("grading on the GPU")
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    fx = fixtures()
    if made is None:
        subs = out / "submissions"
        names = make_gpu_fixtures(subs)
    else:
        subs = Path(made)
        names = {f"g{i}_{kind}": kind for i, kind in enumerate(fx.GPU_FIXTURES)}
        missing = [n for n in names if not (subs / f"{n}.ipynb").exists()]
        if missing:
            raise GradingError(f"{subs} lacks {', '.join(missing)}: make them with grade --make-gpu-fixtures DIR")
    t0 = time.perf_counter()
    _, rows, _ = grade_folder(subs, out / "graded", 1, cell_timeout, sandboxed=sandboxed, gpu=True)
    seconds = time.perf_counter() - t0
    by = {names[r.learner]: r for r in rows}
    rows_out = []
    for kind, expect in fx.GPU_FIXTURES.items():
        r = by[kind]
        lost = {q: r.possible[q] - r.points[q] for q in r.possible if r.points.get(q, 0.0) != r.possible[q]}
        g = (r.rerun or {}).get("gpu") or {}
        counted = g.get("counted") or {}
        held = lost == {q: float(v) for q, v in expect.items()} and r.status == "ok"
        if kind == "hang_on_the_gpu":
            held = held and str(g.get("status", "")).startswith("timeout")
        rows_out.append({
            "name": kind, "expected_lost": expect, "lost": lost, "as_deserved": held, "status": r.status,
            "seconds": round(r.seconds, 1), "gpu_status": g.get("status"), "gpu_rerun_seconds": g.get("seconds"),
            "device_in_sandbox": g.get("device"),
            "counted_wrong_widths": sorted(int(n) for n, c in counted.items()
                                           if c.get("error") or c.get("missed") or c.get("past_end") or c.get("wrong")),
            "counted_widths": len(counted), "measured": _measured(g), "cmp": g.get("cmp"),
            "feedback": [ln for ln in r.feedback.split("\n") if ln.startswith(("q6", "q7", "  lost"))][:12]})
    rep = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
           "provenance": provenance.collect(), "sandbox": sandbox.source() if sandboxed is not False else "none",
           "gpu_nodes_bound": sandbox.gpu_nodes(), "seconds": round(seconds, 1),
           "rerun_gpu_seconds_limit": rerun.GPU_SECONDS,
           "control_ms": next((r.rerun["gpu"].get("control_ms") for r in rows
                               if r.rerun and (r.rerun.get("gpu") or {}).get("control_ms") is not None), None),
           "fixtures": rows_out}
    Path(report).parent.mkdir(parents=True, exist_ok=True)
    Path(report).write_text(json.dumps(rep, indent=1) + "\n")
    return rep


def _escaped() -> list[str]:  # pragma: no mutate block (not scoring)
    """Where an attack left its marker outside the sandbox (every place lab_fixtures' escape tries to write)."""
    marker = fixtures().MARKER
    places = [ROOT, ROOT / "launchlab", ROOT / "launchlab" / "faces", Path("/usr"), Path("/usr/bin"), Path("/etc"),
              Path(sys.prefix), Path(os.path.realpath(sys.executable)).parent, Path("/"), Path("/dev")]
    found = [str(p / marker) for p in places if (p / marker).exists()]
    return found + [p for p in ("/tmp/pwned",) if os.path.exists(p)]


def _reset_peak_rss() -> None:  # pragma: no mutate block (not scoring)
    """Start this process's peak resident memory afresh (Linux: 5 to /proc/self/clear_refs resets VmHWM)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_rss_mb() -> float | None:  # pragma: no mutate block (not scoring)
    """This process's peak resident memory since the last reset, in MB (VmHWM)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) * 1024 / 1e6, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def control_chars_in(text: str) -> int:
    """Control characters a terminal would act on in `text`: C0 but tab and newline (a CR right before a newline,
    the CSV's own line end, excepted), DEL, C1 and the bidirectional controls."""
    n = 0
    for i, ch in enumerate(text):
        o = ord(ch)
        if ch == "\t" or ch == "\n" or (ch == "\r" and text[i + 1:i + 2] == "\n"):
            continue
        if o < 0x20 or 0x7F <= o < 0xA0 or ch in gradebook.BIDI:
            n += 1
    return n


def control_chars(folder: Path) -> int:  # pragma: no mutate block (not scoring)
    """Control characters in every file grading wrote under `folder` (grades.csv, feedback, reports, logs)."""
    return sum(control_chars_in(f.read_text("utf-8", "replace")) for f in Path(folder).rglob("*") if f.is_file())


def parse_seconds() -> dict:  # pragma: no mutate block (not scoring)
    """The longest each grader-side reader of learner bytes takes on scan.worst_inputs at its size limit: the
    intake's look (SUBMISSION_BYTES), the answers channel (ANSWERS_BYTES, as bytes and as one `{"answers": `
    line), the harness's report (REPORT_BYTES) and a log's last line (LOG_BYTES). {reader: seconds}."""
    mark = rerun.MARK.encode()
    readers = {
        "intake": (intake.SUBMISSION_BYTES, lambda d: intake.notebook_or_why(b"{" + d[1:])),
        "answers_channel": (runner.ANSWERS_BYTES, lambda d: (runner._lines(d),
                                                             runner._lines(b'\n{"answers": ' + d[13:]))),
        "harness_report": (rerun.REPORT_BYTES, lambda d: scan.marked_line(b"\n" + mark + d[len(mark) + 1:], mark)),
        "log_tail": (runner.LOG_BYTES, lambda d: d.decode("utf-8", "replace").strip().splitlines()[-1:]),
    }
    out = {}
    for name, (size, read) in readers.items():
        worst = 0.0
        for data in scan.worst_inputs(size).values():
            t0 = time.perf_counter()
            read(data[:size])
            worst = max(worst, time.perf_counter() - t0)
        out[name] = round(worst, 3)
    return out


def honest(a: Assigned, out: Path, jobs: int = 2, cell_timeout: float = 20,
           sandboxed: bool | None = None) -> dict:  # pragma: no mutate block (not scoring)
    """Every honest variant of lab_fixtures.HONEST (the master as learners write it) graded as a class: each must
    get full marks. {name: points}."""
    fx = fixtures()
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    folder = out / "submissions"
    folder.mkdir(parents=True)
    for name in fx.HONEST:
        fx.make_honest(a.autograder, name, folder / f"{name}.ipynb")
    _, rows, _ = grade_folder(folder, out / "graded", jobs, cell_timeout, sandboxed=sandboxed)
    return {r.learner: {"got": r.total, "of": r.out_of, "status": r.status,
                        "lost": {q: r.possible[q] - r.points[q] for q in r.possible if r.points[q] != r.possible[q]}}
            for r in rows}


def attacks(a: Assigned, out: Path, jobs: int = 2, cell_timeout: float = 20, total_timeout: float = 120,
            sandboxed: bool | None = None, skip: tuple = ()) -> dict:  # pragma: no mutate block (not scoring)
    """Every attack of lab_fixtures.ATTACKS graded in one folder beside honest neighbours, by this process's
    user (root, on the machines the report names): what each got and deserved, its status, whether it held;
    whether the course tree and every place an escape would write stayed as they were; what a submission is
    inside the sandbox (runner.probe) and the limits it ran under."""
    import csv
    fx = fixtures()
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    folder = out / "submissions"
    folder.mkdir(parents=True)
    expect = fx.make_attacks(folder, LEARNER, a.autograder, out / "elsewhere", cell_timeout, total_timeout, skip)
    before, escaped_before = _tree_files(), _escaped()
    _reset_peak_rss()
    t0 = time.perf_counter()
    stopped = None
    said: list = []
    try:
        csv_path, rows, _ = grade_folder(folder, out / "graded", jobs, cell_timeout, sandboxed=sandboxed,
                                         total_timeout=total_timeout, say=said.append)
        said.append(csv_path.read_text())                # what `grade` prints: the statement, then the sheet
    except Exception as e:                   # noqa: BLE001 - the run itself stopping is what this measures
        stopped, rows, csv_path = f"{type(e).__name__}: {e}", [], None
    seconds = time.perf_counter() - t0
    peak_mb = _peak_rss_mb()
    now = _tree_files()
    changed = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    escaped = _escaped()
    unchanged = not changed and escaped == escaped_before == []
    table = {}
    if csv_path is not None:
        with csv_path.open(newline="") as f:
            table = {r["learner"]: r for r in csv.DictReader(f)}
    by = {r.learner: r for r in rows}
    results = {}
    for learner, (kind, deserves, prefix) in expect.items():
        r = by.get(learner)
        held = r is not None and r.total == deserves and r.status.startswith(prefix)
        if kind == "spreadsheet_formula_name":       # and the CSV shows the name as text, not as a formula
            held = held and ("'" + learner) in table and learner not in table
        results[kind] = {"deserves": deserves, "got": None if r is None else r.total,
                         "status": None if r is None else r.status[:160],
                         "seconds": None if r is None else round(r.seconds, 1), "held": held}
    neighbours = all(results[k]["held"] for k in fx.NEIGHBOURS if k in results)
    lost = sum(max(0.0, fx.NEIGHBOURS[k] - (results[k]["got"] or 0.0)) for k in fx.NEIGHBOURS if k in results)
    controls = control_chars(out / "graded") + sum(control_chars_in(text) for text in said)
    attack_kinds = [k for k in fx.ATTACKS if k in results]
    possible = sum(float(p) for p in tests().POINTS.values())
    pr = runner.probe()
    return {"attack_run": {"grader_uid": os.geteuid(), "jobs": jobs, "cell_timeout_s": cell_timeout,
                           "total_timeout_s": total_timeout, "seconds": round(seconds, 1), "stopped": stopped,
                           "skipped": list(skip),
                           "csv_rows": len(table), "course_tree_unchanged": unchanged,
                           "changed_files": changed[:20], "escape_markers": escaped,
                           "neighbours_right": neighbours, "results": results},
            "neighbour_points_lost": lost, "neighbours": sum(k in results for k in fx.NEIGHBOURS),
            "grader_peak_rss_mb_flood": peak_mb, "control_chars_in_outputs": controls,
            "attack_fixtures": len(attack_kinds),
            "attack_fixtures_held": sum(results[k]["held"] for k in attack_kinds) if unchanged and neighbours else 0,
            "zero_knowledge_score_pct": (100 * (results["zero_knowledge"]["got"] or 0) / possible
                                         if "zero_knowledge" in results else None),
            "one_bad_submission_stops_run": stopped is not None or len(table) != len(expect),
            "sandbox_probe": {k: pr[k] for k in ("uid", "gid", "caps", "remount_refused", "new_user_namespace",
                                                 "writable")},
            "sandbox_capabilities": pr["capabilities"], "sandbox_uid_nonzero": pr["uid"] != 0 and pr["gid"] != 0,
            "resource_limits": pr["limits"], "resource_limits_by": pr["limits_by"]}


def main(argv=None) -> int:  # pragma: no mutate block (not scoring)
    import argparse
    ap = argparse.ArgumentParser(prog="python -m launchlab grade")
    ap.add_argument("folder", nargs="?")
    ap.add_argument("--out", default=str(ROOT / "build" / "grade"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120, help="seconds per cell (a cell past it is stopped)")
    ap.add_argument("--total-timeout", type=float, default=None,
                    help="seconds per submission in all (default max(600, 4 x --timeout)); the steps it finished "
                         "before are graded")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="grade without bubblewrap: only for submissions you trust (see launchlab.faces.sandbox)")
    ap.add_argument("--accept-weaker-limits", action="store_true",
                    help="grade untrusted work even where a submission's memory and processes cannot be bounded "
                         "(no writable cgroup); the limits that hold are printed first (also LAUNCHLAB_ACCEPT_WEAKER_"
                         "LIMITS=1)")
    ap.add_argument("--benchmark", type=int, default=0, metavar="N",
                    help="grade N made-up submissions (solutions, blank, wrong ones), time it, write "
                         "data/grading/report.json")
    ap.add_argument("--gpu", action="store_true",
                    help="on a GPU: re-run each submission's steps 6-7 live in the sandbox with the GPU bound, and "
                         "measure its two arms (ABBA, cmp) in the grader; with --fixtures, grade the GPU fixtures and "
                         "write data/grading/gpu.json")
    ap.add_argument("--fixtures", action="store_true",
                    help="with --gpu: grade the GPU fixtures (made now, or the folder given) instead of a class")
    ap.add_argument("--make-gpu-fixtures", metavar="DIR", default=None,
                    help="write the GPU fixtures as submissions into DIR (needs otter; no GPU)")
    a = ap.parse_args(argv)
    if a.make_gpu_fixtures:
        print("\n".join(sorted(make_gpu_fixtures(Path(a.make_gpu_fixtures)))))
        return 0
    if a.gpu and a.fixtures:
        rep = gpu_fixtures(sandboxed=False if a.no_sandbox else None,
                           made=Path(a.folder) if a.folder else None)
        print(json.dumps([{k: f[k] for k in ("name", "lost", "as_deserved", "gpu_status", "measured")}
                          for f in rep["fixtures"]], indent=1))
        return 0 if all(f["as_deserved"] for f in rep["fixtures"]) else 1
    if a.benchmark:
        print(json.dumps(benchmark(a.benchmark, a.jobs, sandboxed=False if a.no_sandbox else None), indent=1))
        return 0
    if not a.folder:
        ap.error("give a folder of submitted notebooks (or --benchmark N)")
    try:
        path, rows, secs = grade_folder(Path(a.folder), Path(a.out), a.jobs, a.timeout,
                                        sandboxed=False if a.no_sandbox else None, total_timeout=a.total_timeout,
                                        gpu=a.gpu, accept_weaker_limits=a.accept_weaker_limits or None)
    except GradingError as e:
        print(f"grade: {e}", file=sys.stderr)
        return 2
    print(path.read_text())
    print(f"{len(rows)} submissions graded in {secs:.1f} s ({a.jobs} at a time); feedback in {Path(a.out) / 'feedback'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
