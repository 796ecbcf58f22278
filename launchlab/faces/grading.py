"""Grading the lab with otter-grader 7: the learner copy generated from the instructor's master, and a folder of
submissions graded offline into a CSV.

    master    lab_solutions/09_lab_audit.ipynb  -- solutions, public and hidden tests (otter's assign format)
    learner   notebooks/09_lab_audit.ipynb      -- what `otter assign` makes of the master, executed in replay

    python -m launchlab grade DIR [--out build/grade] [--jobs 2] [--timeout 180]
    make grade SUBMISSIONS=DIR

`grade` runs `otter assign` on the master (the autograder zip is rebuilt every time, never stale), then grades
each `*.ipynb` in DIR in its own child process: `otter.api.grade_submission` (otter's non-containerized grader:
no Docker, nothing downloaded), in replay mode, under a time limit, without network (`unshare -rn` where the
kernel allows it). A submission that raises, hangs or is not a notebook costs only its own row. Out come
`grades.csv` (learner, points per question, total, possible, status) and `feedback/<learner>.txt`, otter's
report of every test the learner may see (hidden tests' names and results, not their code).
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
from launchlab.faces import course

ROOT = paths.ROOT
# The graded lab's files, from the section whose manifest declares a graded lab (launchlab.sections)
_LAB = next(s for s in sections.all() if s.graded)
MASTER = Path(_LAB.graded["master"])
LEARNER = Path(_LAB.graded["learner"])
QUESTIONS = ("q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8")


class GradingError(RuntimeError):
    pass


def otter_available() -> bool:
    try:
        import otter  # noqa: F401
    except ImportError:
        return False
    return True


def _env() -> dict:
    return dict(os.environ, LAUNCHLAB_MODE="replay", PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]))


@dataclass
class Assigned:
    student: Path            # the learner notebook otter made
    autograder: Path         # the solutions notebook with every test
    zip: Path                # what the grader runs


def assign(out: Path, master: Path = MASTER) -> Assigned:
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


def comparable(nb_path: Path) -> dict:
    """What must not drift between the committed learner copy and otter's: every cell's type, source and
    otter's locks, and the embedded public tests. Outputs and execution counts are the course's (replay)."""
    nb = json.loads(Path(nb_path).read_text())
    cells = [{"type": c["cell_type"], "source": "".join(c["source"]),
              "locked": [c["metadata"].get(k) for k in ("deletable", "editable")],
              "tags": c["metadata"].get("tags", [])} for c in nb["cells"]]
    return {"cells": cells, "otter": nb["metadata"].get("otter")}


def drift(committed: Path = LEARNER, generated: Path | None = None) -> list[str]:
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


def refresh_learner() -> Path:
    """Regenerate notebooks/09 from the master and execute it in replay (the committed outputs)."""
    with tempfile.TemporaryDirectory() as d:
        a = assign(Path(d) / "dist")
        shutil.copy(a.student, LEARNER)
    course.refresh([LEARNER.stem[:2]])
    return LEARNER


# ------------------------------------------------------------------ wrong submissions (the grader's own tests)
# Each: a line of the solution as the master writes it, what the wrong submission writes instead, and the
# points it must lose per question -- no more, no fewer.
FIXTURES = {
    "fine_kernel_as_offender": (
        "offender = ranking[0]  # SOLUTION",
        'offender = next(k for k in ranking if "kda_prep" in k)   # the grid = n_head kernel, which is fine',
        {"q3": 2}),
    "median_without_spread": (
        "spread_pct = 100 * dg.robust_spread(reps)  # SOLUTION\n",
        "spread_pct = None   # a median, no spread\n",
        {"q4": 1}),
    "verdict_without_spread": (
        'verdict = "faster" if gain_ms > spread_ms else "slower" if -gain_ms > spread_ms else "no measurable difference"  # SOLUTION',
        'spread_ms = None\nverdict = "faster" if gain_ms > 0 else "slower"   # any gap is a result',
        {"q6": 1}),
    "tolerance_called_a_byte_check": (
        'evidence = "cmp"  # SOLUTION', 'evidence = "tolerance"   # the 1e-6 test passed', {"q7": 1}),
    "raises_in_step_5": (
        "# BEGIN SOLUTION\naxes = {", 'raise RuntimeError("unfinished")\n# BEGIN SOLUTION\naxes = {', {"q5": 2}),
}


def make_fixture(solutions: Path, name: str, out: Path) -> Path:
    """A wrong submission: the solutions notebook with one line replaced (FIXTURES[name])."""
    old, new, _ = FIXTURES[name]
    nb = json.loads(Path(solutions).read_text())
    hits = 0
    for c in nb["cells"]:
        src = "".join(c["source"])
        if old in src:
            c["source"] = src.replace(old, new)
            hits += 1
    if hits != 1:
        raise GradingError(f"fixture {name}: {hits} cells hold {old!r}, expected exactly one")
    out.write_text(json.dumps(nb))
    return out


# ------------------------------------------------------------------ grading
@dataclass
class Graded:
    learner: str
    points: dict = field(default_factory=dict)       # question -> points earned
    possible: dict = field(default_factory=dict)     # question -> points possible
    status: str = "ok"                               # ok, error: ..., timeout, not a notebook
    feedback: str = ""                               # for the learner: points per question, public tests in full
    report: str = ""                                 # for the instructor: every test, hidden ones included
    seconds: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.points.values())

    @property
    def out_of(self) -> float:
        return sum(self.possible.values())


LOOPBACK_UP = 'ip link set lo up && exec "$0" "$@"'


def _isolate() -> list[str]:
    """A prefix that runs a command without network where this machine allows it: `unshare -rn` (new user and
    network namespaces) with only the loopback brought up -- the notebook's kernel talks to its grader over
    127.0.0.1. Empty where unshare or ip is missing or refused (then grading runs with the host's network)."""
    exe, ip = shutil.which("unshare"), shutil.which("ip")
    if not exe or not ip:
        return []
    prefix = [exe, "-rn", "sh", "-c", LOOPBACK_UP]
    ok = subprocess.run([*prefix, "true"], capture_output=True).returncode == 0
    return prefix if ok else []


class _Worker:
    """A child process that imports otter once (3 s) and grades the submissions it is sent, one at a time, each
    in a fresh Jupyter kernel (otter starts one per notebook) -- without network where `isolate` allows. The
    parent enforces each submission's time limit: past it the worker is killed (its kernel exits with it) and
    a new one takes the next submission."""

    def __init__(self, ag_zip: Path, isolate: list[str]):
        self.ag_zip, self.isolate, self.p = str(Path(ag_zip).resolve()), isolate, None

    def _start(self):
        self.p = subprocess.Popen([*self.isolate, sys.executable, "-m", "launchlab.faces.grading", "_serve", self.ag_zip],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True, env=_env(), start_new_session=True)

    def grade(self, submission: Path, out: Path, timeout: float) -> str | None:
        """None when graded, else why not ("timeout after ...", "the grader exited ...")."""
        import select
        import signal
        if self.p is None or self.p.poll() is not None:
            self._start()
        self.p.stdin.write(f"{submission}\t{out}\n")
        self.p.stdin.flush()
        ready, _, _ = select.select([self.p.stdout], [], [], timeout)
        line = self.p.stdout.readline() if ready else ""
        if line.strip() == "done":
            return None
        why = f"timeout after {timeout:.0f} s" if not ready else f"the grader exited {self.p.poll()}"
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()
        self.p = None
        return why

    def close(self):
        if self.p is not None and self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=30)


def grade_one(submission: Path, worker: "_Worker", timeout: float = 180) -> Graded:
    """One submission through a worker: otter's grader, replay mode, its time limit, no network."""
    submission = Path(submission)
    g = Graded(submission.stem)
    t0 = time.perf_counter()
    try:
        json.loads(submission.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        g.status = "not a notebook"
    else:
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "result.json"
            work = Path(d) / submission.name
            shutil.copy(submission, work)
            why = worker.grade(work, out, timeout)
            if why:
                g.status = why
            elif out.exists():
                r = json.loads(out.read_text())
                g.points, g.possible, g.feedback = r["points"], r["possible"], r["feedback"]
                g.report = r.get("report", "")
                if r.get("error"):
                    g.status = f"error: {r['error']}"
            else:
                g.status = "error: the grader wrote no result"
    for q in QUESTIONS:                              # a submission that never ran scores 0, not blank
        g.points.setdefault(q, 0.0)
    g.seconds = time.perf_counter() - t0
    return g


def _one(ag_zip: str, submission: str, out: str) -> None:
    """Grade one submission in this process; write points per question, the learner's and the full report."""
    import otter.api
    res = {"points": {}, "possible": {}, "feedback": "", "report": "", "error": None}
    try:
        r = otter.api.grade_submission(submission, ag_zip, quiet=True)
        for q in QUESTIONS:
            tf = r.get_result(q)
            res["points"][q] = float(tf.score)
            res["possible"][q] = float(tf.possible)
        res["feedback"] = r.summary(public_only=True)           # what the learner sees: public tests in full
        res["report"] = r.summary(public_only=False)            # the instructor's: every test
        if r.has_catastrophic_failure():
            res["error"] = "the notebook could not be executed"
    except Exception as e:                                   # noqa: BLE001 - one bad submission, one bad row
        res["error"] = f"{type(e).__name__}: {e}"
    Path(out).write_text(json.dumps(res))


def _serve(ag_zip: str) -> None:
    """The worker's loop: one line per submission ("path<TAB>result path"), "done" when its result is written.
    Everything otter or the notebook prints goes to stderr; stdout carries only the protocol."""
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    import otter.api  # noqa: F401 - imported once per worker, the point of having workers
    for line in sys.stdin:
        sub, out = line.rstrip("\n").split("\t")
        _one(ag_zip, sub, out)
        proto.write("done\n")
        proto.flush()


def grade_folder(folder: Path, out: Path = ROOT / "build" / "grade", jobs: int = 2, timeout: float = 180,
                 ag_zip: Path | None = None) -> tuple[Path, list[Graded], float]:
    """Grade every *.ipynb in `folder`: grades.csv and feedback/<learner>.txt under `out`; (csv, rows, seconds)."""
    folder, out = Path(folder), Path(out)
    subs = sorted(folder.glob("*.ipynb"))
    if not subs:
        raise GradingError(f"no *.ipynb submissions in {folder}")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if ag_zip is None:
        ag_zip = assign(out / "dist").zip
    iso = _isolate()
    if not iso:
        print("grade: unshare -rn is not available here; submissions run with this machine's network",
              file=sys.stderr)
    import queue
    workers: queue.Queue = queue.Queue()
    for _ in range(max(1, jobs)):
        workers.put(_Worker(ag_zip, iso))

    def run(sub):
        w = workers.get()
        try:
            return grade_one(sub, w, timeout)
        finally:
            workers.put(w)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        rows = list(ex.map(run, subs))
    while not workers.empty():
        workers.get().close()
    seconds = time.perf_counter() - t0
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


def benchmark(n: int = 30, jobs: int = 2, out: Path = ROOT / "build" / "grade-benchmark",
              report: Path = REPORT) -> dict:
    """Grade n submissions -- the master's solutions, the blank learner copy and every wrong fixture, cycled --
    as `make grade` would (assign included), timed on this machine; the result is written to `report`."""
    import platform
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    subs = out / "submissions"
    subs.mkdir(parents=True)
    t0 = time.perf_counter()
    a = assign(out / "dist")
    kinds = ["master", "blank", *FIXTURES]
    for i in range(n):
        kind = kinds[i % len(kinds)]
        dst = subs / f"learner{i:02d}_{kind}.ipynb"
        if kind == "master":
            shutil.copy(a.autograder, dst)
        elif kind == "blank":
            shutil.copy(LEARNER, dst)
        else:
            make_fixture(a.autograder, kind, dst)
    _, rows, _ = grade_folder(subs, out / "graded", jobs, ag_zip=a.zip)
    seconds = time.perf_counter() - t0
    by = {}
    for r in rows:
        by.setdefault(r.learner.split("_", 1)[1], r)
    possible = next(r.possible for r in rows if r.possible)
    full = by["master"].points
    rep = {"submissions": n, "jobs": jobs, "cpus": os.cpu_count(), "seconds": round(seconds, 1),
           "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "possible": sum(possible.values()),
           "master_score_pct": 100 * by["master"].total / sum(possible.values()),
           "blank_score_pct": 100 * by["blank"].total / sum(possible.values()),
           "statuses": sorted({r.status for r in rows}),
           "fixtures": {k: {"expected_lost": FIXTURES[k][2],
                            "lost": {q: full[q] - by[k].points[q] for q in QUESTIONS if full[q] != by[k].points[q]}}
                        for k in FIXTURES}}
    Path(report).parent.mkdir(parents=True, exist_ok=True)
    Path(report).write_text(json.dumps(rep, indent=1) + "\n")
    return rep


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m launchlab grade")
    ap.add_argument("folder", nargs="?")
    ap.add_argument("--out", default=str(ROOT / "build" / "grade"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--benchmark", type=int, default=0, metavar="N",
                    help="grade N made-up submissions (solutions, blank, wrong ones), time it, write "
                         "data/grading/report.json")
    a = ap.parse_args(argv)
    if a.benchmark:
        print(json.dumps(benchmark(a.benchmark, a.jobs), indent=1))
        return 0
    if not a.folder:
        ap.error("give a folder of submitted notebooks (or --benchmark N)")
    try:
        path, rows, secs = grade_folder(Path(a.folder), Path(a.out), a.jobs, a.timeout)
    except GradingError as e:
        print(f"grade: {e}", file=sys.stderr)
        return 2
    print(path.read_text())
    print(f"{len(rows)} submissions graded in {secs:.1f} s ({a.jobs} at a time); feedback in {Path(a.out) / 'feedback'}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "_serve":
        _serve(sys.argv[2])
    else:
        sys.exit(main(sys.argv[1:]))
