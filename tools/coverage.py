"""`make coverage`: how much of launchlab the tests run, combined over make test and the GPU tests (issue 27).

    python tools/coverage.py run        make test's tests and notebooks under coverage (replay, this machine; the
                                        tests not marked slow, spread over the CPUs as make test spreads them);
                                        every process they start is measured too ([tool.coverage.run] patch)
    python tools/coverage.py gpu OUT    on the H200: the GPU tests (-m gpu) under coverage; writes OUT/h200.coverage
                                        (commit it as data/coverage/<date>-h200.coverage) and OUT/gpu-tests.txt
    python tools/coverage.py report     combine this machine's data with the newest committed GPU data file and
                                        write data/coverage/report.json; prints a table last

The report keeps, per file of launchlab: statements, missing, percent and its sha256 (a test tells a stale report
by them), the GPU data file it combined (named with its date), and the files left out with the reason (OMITTED).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "coverage"
DATA = ROOT / "data" / "coverage"
REPORT = DATA / "report.json"
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg",
         "--nbval-cell-timeout", "600"]

# Files of launchlab measured by neither run, and why (none may hide logic a test could reach).
OMITTED: dict[str, str] = {}


def _coverage(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coverage", *args], cwd=ROOT, env=env, check=check)


def _env(data_file: Path) -> dict:
    env = dict(os.environ, COVERAGE_FILE=str(data_file))
    env["COVERAGE_RCFILE"] = str(ROOT / "pyproject.toml")
    return env


def run() -> int:
    shutil.rmtree(BUILD, ignore_errors=True)
    BUILD.mkdir(parents=True)
    # make test's own selection and spread: the tests not marked slow, over the CPUs by pytest-xdist (each worker
    # a process coverage measures: parallel data files, combined by `report`); with the slow ones, single-process,
    # it ran ~110 minutes on 2 CPUs (2026-12-05)
    jobs = os.environ.get("JOBS", "auto")
    r = _coverage("run", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", "-n", jobs,
                  "--dist", "loadscope", "tests", "notebooks", *NBVAL, env=_env(BUILD / ".coverage"), check=False)
    return r.returncode


def gpu(out: Path) -> int:
    """The GPU tests under coverage, their log beside the data file."""
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "parts"
    tmp.mkdir(exist_ok=True)
    env = _env(tmp / ".coverage")
    with open(out / "gpu-tests.txt", "w") as log:
        r = subprocess.run([sys.executable, "-m", "coverage", "run", "-m", "pytest", "-m", "gpu", "-v", "-rs",
                            "-p", "no:cacheprovider", "tests"], cwd=ROOT, env=env, stdout=log,
                           stderr=subprocess.STDOUT)
    parts = sorted(str(p) for p in tmp.glob(".coverage*"))
    print(f"{len(parts)} data files from the GPU run (pytest and the processes it started)")
    _coverage("combine", "--data-file", str(out / "h200.coverage"), *parts, env=env, check=False)
    return r.returncode


def newest_gpu_file() -> Path | None:
    files = sorted(DATA.glob("*-h200.coverage"))
    return files[-1] if files else None


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def report() -> dict:
    """Combine (keeping the inputs) and write REPORT."""
    parts = sorted(BUILD.glob(".coverage.*")) + ([BUILD / ".coverage"] if (BUILD / ".coverage").exists() else [])
    if not parts:
        raise SystemExit("no coverage data of make test here: run `python tools/coverage.py run` first")
    g = newest_gpu_file()
    combined = BUILD / "combined.coverage"
    combined.unlink(missing_ok=True)
    inputs = [str(p) for p in parts] + ([str(g)] if g else [])
    env = _env(combined)
    _coverage("combine", "--keep", "--data-file", str(combined), *inputs, env=env)
    js = BUILD / "coverage.json"
    _coverage("json", "--data-file", str(combined), "-o", str(js), "--include", "launchlab/*", env=env)
    raw = json.loads(js.read_text())
    files = {}
    for name, f in sorted(raw["files"].items()):
        rel = name[name.index("launchlab/"):] if "launchlab/" in name else name
        s = f["summary"]
        files[rel] = {"statements": s["num_statements"], "missing": s["missing_lines"],
                      "percent": round(s["percent_covered"], 1), "sha256": sha256(ROOT / rel)}
    every = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "launchlab").rglob("*.py"))
    unmeasured = [p for p in every if p not in files and p not in OMITTED]
    t = raw["totals"]
    rep = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "tool": "coverage " + subprocess.run([sys.executable, "-m", "coverage", "--version"],
                                                capture_output=True, text=True).stdout.split()[2].rstrip(","),
           "runs": {"make test": "this machine, replay: tests/ and notebooks/ (nbval), with their subprocesses",
                    "gpu": (f"{g.relative_to(ROOT)} (the H200: pytest -m gpu)" if g else None)},
           "percent": round(t["percent_covered"], 1), "statements": t["num_statements"],
           "missing": t["missing_lines"], "files": files, "omitted": OMITTED,
           "never_imported": unmeasured}
    DATA.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(rep, indent=1) + "\n")
    return rep


def table(rep: dict) -> str:
    rows = [f"{'file':<52} {'stmts':>6} {'miss':>5} {'cover':>6}"]
    low = sorted(rep["files"].items(), key=lambda kv: kv[1]["percent"])[:12]
    rows += [f"{k:<52} {v['statements']:>6} {v['missing']:>5} {v['percent']:>5.1f}%" for k, v in low]
    rows.append(f"{'launchlab (all)':<52} {rep['statements']:>6} {rep['missing']:>5} {rep['percent']:>5.1f}%"
                f"   GPU data: {rep['runs']['gpu']}")
    return "\n".join(rows)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    what = argv[0] if argv else "report"
    if what == "run":
        rc = run()
        print(table(report()))
        return rc
    if what == "gpu":
        return gpu(Path(argv[1]) if len(argv) > 1 else BUILD / "gpu")
    if what == "report":
        print(table(report()))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
