"""`make test` as a newcomer runs it: a fresh clone of this repository's HEAD, nothing in it but what git tracks,
then `make test` -- the set-up (a new .venv, every package from PyPI or pip's cache) and the whole fast suite --
timed from the clone to its end (issue 38: within 6 minutes on this 2-CPU machine kind).

    python tools/clean_clone.py [--keep DIR] [--target test]

Writes data/tests/make_test.json: the seconds (clone, set-up and pytest apart), pytest's counts, the 15 slowest
tests as `--durations` lists them, the machine and the commit; `summary --json` reads it
(tests.make_test_seconds_clean_clone). Run it on a quiet machine: another job beside it is measured too.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "data" / "tests" / "make_test.json"


def durations(log: str) -> list[list]:
    """The `--durations` block: [[seconds, phase, test id], ...] in the order pytest printed them."""
    out, inside = [], False
    for line in log.splitlines():
        if re.match(r"=+ slowest \d+ durations =+", line):
            inside = True
            continue
        if inside:
            m = re.match(r"([\d.]+)s (call|setup|teardown)\s+(\S.*)$", line)
            if not m:
                if line.startswith("="):
                    break
                continue
            out.append([float(m.group(1)), m.group(2), m.group(3).strip()])
    return out


def counts(log: str) -> dict:
    """pytest's last summary line, as numbers: {"passed": 1190, "skipped": 133, ...}."""
    lines = [ln for ln in log.splitlines() if re.search(r"\d+ passed", ln)]
    if not lines:
        return {}
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)",
                                             lines[-1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", type=Path, help="clone into DIR and keep it (default: a temporary folder, removed)")
    ap.add_argument("--target", default="test")
    a = ap.parse_args(argv)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    where = a.keep or Path(tempfile.mkdtemp(prefix="launchlab-clone-"))
    if where.exists() and any(where.iterdir()):
        raise SystemExit(f"{where} is not empty")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAUNCHLAB_", "VIRTUAL_ENV", "PYTEST_"))}
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if ".venv" not in p)
    t0 = time.monotonic()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(where)], check=True)
    t_clone = time.monotonic() - t0
    p = subprocess.run(["make", a.target], cwd=where, env=env, capture_output=True, text=True)
    total = time.monotonic() - t0
    log = p.stdout + p.stderr
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "clean_clone.log").write_text(log)
    m = re.search(r"in ([\d.]+)s \(", log.splitlines()[-1] if log.strip() else "") or \
        re.search(r"(?m)^.* in ([\d.]+)s(?: \(\S+\))?$", log)
    pytest_s = float(m.group(1)) if m else None
    rep = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": head,
           "tree_clean": not dirty, "target": f"make {a.target}", "rc": p.returncode,
           "seconds": round(total, 1), "clone_seconds": round(t_clone, 1),
           "pytest_seconds": pytest_s, "setup_seconds": round(total - t_clone - (pytest_s or 0), 1),
           "counts": counts(log), "slowest": durations(log)[:15],
           "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
           "bwrap_on_path": shutil.which("bwrap", path=env["PATH"])}
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(rep, indent=1) + "\n")
    if not a.keep:
        shutil.rmtree(where, ignore_errors=True)
    print(f"{'make ' + a.target:<14} rc {p.returncode}  {rep['seconds']:.1f} s from the clone "
          f"(clone {rep['clone_seconds']} s, set-up {rep['setup_seconds']} s, pytest {pytest_s} s)  {rep['counts']}")
    for s, phase, test in rep["slowest"]:
        print(f"  {s:6.2f} s {phase:<8} {test[:100]}")
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
