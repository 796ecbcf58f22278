"""Semantic mutants (issue 43): realistic bugs that mutmut's one-operator changes cannot make -- a condition
dropped, an argument removed, a comparison widened, a filter inverted -- kept as patches in
tests/semantic_mutants/, each naming the tests that must kill it. `make mutation` runs them beside mutmut.

    python tools/semantic_mutation.py            # every mutant; data/mutation/semantic.json; a table last
    python tools/semantic_mutation.py --check    # only: does every patch still apply to the tree (no tests run)

A patch file is a unified diff (as `git diff` writes it) after a header of `# key: value` lines:
    # gap: the class of test gap it stands for (issue 43's list, or the module's own promise)
    # bug: what the change does, in words
    # kill: the test node ids (or files) that must fail with the patch applied
Each mutant is applied to the working tree with `git apply`, its kill tests run (pytest -x), and the patch is
reversed in a `finally`, whatever happened. Killed: the tests failed (pytest exit 1). A mutant that no longer
applies, or whose tests error out (exit 2-5), is reported as such and is not counted killed. A survivor is a
test to write, never a line to explain away.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "tests" / "semantic_mutants"
REPORT = ROOT / "data" / "mutation" / "semantic.json"


def header(path: Path) -> dict:
    meta: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# "):
            break
        key, _, value = line[2:].partition(":")
        meta[key.strip()] = (meta.get(key.strip(), "") + " " + value.strip()).strip()
    missing = {"gap", "bug", "kill"} - set(meta)
    if missing:
        raise ValueError(f"{path.name}: the header lacks {sorted(missing)}")
    return meta


def mutants() -> list[Path]:
    return sorted(MUTANTS.glob("*.patch"))


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def applies(path: Path) -> bool:
    return _git("apply", "--check", str(path)).returncode == 0


def run_one(path: Path, timeout: int = 600) -> dict:
    meta = header(path)
    row = {"mutant": path.stem, "gap": meta["gap"], "bug": meta["bug"], "kill": meta["kill"].split(),
           "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    if not applies(path):
        return {**row, "status": "does not apply"}
    if _git("apply", str(path)).returncode != 0:
        return {**row, "status": "does not apply"}
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly",
                            *row["kill"]], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    finally:
        back = _git("apply", "-R", str(path))
        if back.returncode != 0:
            raise RuntimeError(f"{path.name}: could not reverse the patch: {back.stderr}")
    status = {1: "killed", 0: "survived", "timeout": "timeout"}.get(rc, f"error (pytest exit {rc})")
    return {**row, "status": status, "seconds": round(time.perf_counter() - t0, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="only check that every patch applies")
    a = ap.parse_args(argv)
    paths = mutants()
    if a.check:
        bad = [p.name for p in paths if not applies(p)]
        print(f"{len(paths) - len(bad)} of {len(paths)} semantic mutants apply" + (f"; not: {bad}" if bad else ""))
        return 1 if bad else 0
    if _git("diff", "--quiet", "--", "launchlab", "lab_solutions", "tests").returncode != 0:
        print("semantic mutation: the tree has uncommitted changes under launchlab/, lab_solutions/ or tests/; "
              "commit or stash them first (every mutant is applied to the tree and reversed)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rows = [run_one(p) for p in paths]
    killed = [r for r in rows if r["status"] == "killed"]
    rep = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "seconds": round(time.perf_counter() - t0, 1), "mutants": len(rows), "killed": len(killed),
           "by_gap": {g: sum(1 for r in rows if r["gap"] == g) for g in sorted({r["gap"] for r in rows})},
           "not_killed": [r["mutant"] for r in rows if r["status"] != "killed"], "results": rows}
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(rep, indent=1) + "\n")
    print(f"{'mutant':<44} {'status':<22} {'s':>6}  gap")
    for r in rows:
        print(f"{r['mutant']:<44} {r['status']:<22} {r.get('seconds', 0):>6}  {r['gap']}")
    print(f"{len(killed)} of {len(rows)} semantic mutants killed; {REPORT.relative_to(ROOT)}")
    return 0 if len(killed) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
