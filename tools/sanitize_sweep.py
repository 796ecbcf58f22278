"""The reliability sweep's compute-sanitizer runs (issue 14): memcheck, racecheck, initcheck and synccheck over the
self-tests (every kernel and variant against its numpy reference) and one decode token (both presets, on the PDL
launch path, eager and from a graph), each log kept with its command in the first line, and every report
attributed to the kernel it names -- the course's, or a library's (cuBLAS's nvjet GEMMs and split-K reduce).

    python tools/sanitize_sweep.py [--out data/sanitizer] [--tools memcheck,racecheck,...]   (on a GPU)

Writes <out>/sweep_<target>_<tool>.txt and <out>/sweep.json; prints a table last.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
TARGETS = {
    "selftest": [sys.executable, "-m", "launchlab", "selftest"],
    "decode": [sys.executable, "tools/decode_sanitize.py", "3", "16384"],       # MLA, KDA, norms, glue; split path
}
LIBRARY = re.compile(r"nvjet|splitKreduce|cublas|cutlass|gemm", re.I)
# cuda-bindings probes driver entry points this driver lacks on its first call: API "errors" that are not errors
API_FLAGS = ["--report-api-errors", "no"]


def attribute(log: str) -> dict[str, int]:
    """Reports per kernel: the name after 'at' (memcheck, initcheck, synccheck) or in a race report."""
    out: dict[str, int] = {}
    pats = (r"Race reported between \w+ access at (?:void )?([A-Za-z_][\w:<>, ]*?)\+0x",   # once per race
            r"^=========\s+at (?:void )?([A-Za-z_][\w:<>, ]*?)\+0x")                       # the device frame
    for pat in pats:
        for m in re.finditer(pat, log, re.M):
            out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def errors(log: str) -> int | None:
    m = re.search(r"ERROR SUMMARY: (\d+) error", log) or re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) "
                                                                   r"errors?", log)
    return int(m.group(1)) if m else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "sanitizer")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--timeout", type=int, default=400)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    ver = subprocess.run(["compute-sanitizer", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    drv = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    rows = []
    for target, cmd in TARGETS.items():
        for tool in a.tools.split(","):
            full = ["compute-sanitizer", "--tool", tool, *API_FLAGS, *cmd]
            t0 = time.monotonic()
            try:
                p = subprocess.run(full, cwd=ROOT, capture_output=True, text=True, timeout=a.timeout)
                log, rc = p.stdout + p.stderr, p.returncode
            except subprocess.TimeoutExpired as e:
                log, rc = (e.stdout or b"").decode() + (e.stderr or b"").decode() + "\nTIMEOUT", -1
            head = (f"# {' '.join(['compute-sanitizer', '--tool', tool, *API_FLAGS, *[Path(c).name if c == sys.executable else c for c in cmd]])}"
                    f"   ({dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {drv}, {ver})")
            (a.out / f"sweep_{target}_{tool}.txt").write_text(head + "\n" + log)
            per = attribute(log)
            lib = sum(n for k, n in per.items() if LIBRARY.search(k))
            rows.append({"target": target, "tool": tool, "rc": rc, "seconds": round(time.monotonic() - t0, 1),
                         "errors": errors(log), "reports_by_kernel": per, "in_course_kernels": sum(per.values()) - lib,
                         "in_libraries": lib})
    (a.out / "sweep.json").write_text(json.dumps({"date": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
                                                  "gpu": drv, "sanitizer": ver, "runs": rows}, indent=1) + "\n")
    print(f"{'target':<10} {'tool':<10} {'rc':>3} {'s':>6} {'errors':>7} {'course kernels':>15} {'libraries':>10}")
    for r in rows:
        print(f"{r['target']:<10} {r['tool']:<10} {r['rc']:>3} {r['seconds']:>6} {str(r['errors']):>7} "
              f"{r['in_course_kernels']:>15} {r['in_libraries']:>10}")
    return 0 if all(r["errors"] is not None and r["in_course_kernels"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
