"""`make mutation`: mutmut over the course's logic, and a report a test can check (issue 27).

    python tools/mutation.py [--jobs N] [--report-only] [--only MODULE ...]

Runs `mutmut run` (the modules and tests are `[tool.mutmut]` in pyproject.toml), then reads every mutant's
status and, for each survivor, the line the mutant changed. A survivor is either killed by a new test or listed
in data/mutation/equivalent.json as equivalent, with the reason: matched by its module, its function and the
changed line as mutmut writes it, so a listing outlives mutmut's renumbering but not a change to that line.

Writes data/mutation/report.json: per module its sha256 (a test tells a stale report by it), mutants, killed,
survived, timeout, no tests, equivalent; the score (killed + timeout) / (mutants - equivalent); and every
survivor not explained. Prints a table last. `--only` re-runs the modules named (those a change touched) and
carries every other module's entry over from the committed report, refusing if any of those changed since.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "data" / "mutation"
REPORT = OUT / "report.json"
EQUIVALENT = OUT / "equivalent.json"
MUTMUT = Path(os.environ.get("MUTMUT") or Path(sys.executable).with_name("mutmut"))   # MUTMUT: elsewhere (pip --target)


def modules() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"]


def sha256(path: str) -> str:
    return hashlib.sha256((ROOT / path).read_bytes()).hexdigest()


def statuses() -> dict[str, str]:
    """{mutant name: status} from `mutmut results --all true`."""
    out = subprocess.run([str(MUTMUT), "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+__mutmut_\d+): (.+)$", line)
        if m:
            found[m.group(1)] = m.group(2).strip()
    return found


_SOURCES: dict = {}


def _functions(module: str) -> dict[str, list[str]]:
    """Every function of mutmut's copy of `module` (mutants/...), by name, as source lines."""
    import ast
    if module not in _SOURCES:
        text = (ROOT / "mutants" / module).read_text()
        lines = text.splitlines()
        _SOURCES[module] = {n.name: lines[n.lineno - 1:n.end_lineno] for n in ast.walk(ast.parse(text))
                            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in n.name}
    return _SOURCES[module]


def changed_line(name: str) -> str:
    """The line the mutant wrote (stripped; '' when it only deleted lines): its function against the original."""
    import difflib
    fns = _functions(module_of(name))
    short = name.rsplit(".", 1)[1]
    orig = re.sub(r"__mutmut_\d+$", "__mutmut_orig", short)
    a, b = fns.get(orig, []), fns.get(short, [])
    plus = [ln[1:].strip() for ln in difflib.unified_diff(a[1:], b[1:], lineterm="", n=0)
            if ln.startswith("+") and not ln.startswith("+++")]
    if not plus and a[:1] != b[:1]:                   # a default argument in the signature
        plus = [b[0].strip()]
    line = plus[0] if plus else ""
    return re.sub(r"\bx[_ǁ](?:\w*ǁ)?(\w+?)__mutmut_\d+", r"\1", line)      # the mutant's own name -> the function's


def module_of(name: str) -> str:
    """launchlab.core.diagnosis.x_diagnose__mutmut_3 -> launchlab/core/diagnosis.py"""
    head = name.split(".x")[0] if ".x" in name else name.rsplit(".", 1)[0]
    return head.replace(".", "/") + ".py"


def function_of(name: str) -> str:
    tail = name.split(".x", 1)[1] if ".x" in name else name
    return re.sub(r"__mutmut_\d+$", "", tail).lstrip("_").replace("ǁ", ".").strip(".")


def kept(only: list[str]) -> dict:
    """The committed report's entries for every configured module not in `only` -- each only if that module is
    byte-for-byte what the report measured (its sha256), so nothing stale is carried over."""
    old = json.loads(REPORT.read_text())
    out = {"modules": {}, "survivors_unexplained": [], "equivalents_used": []}
    for m in modules():
        if m in only:
            continue
        v = old["modules"].get(m)
        if v is None or v["sha256"] != sha256(m):
            raise SystemExit(f"mutation: {m} changed since the committed report (or is new): run it too (--only {m})")
        out["modules"][m] = v
    out["survivors_unexplained"] = [e for e in old["survivors_unexplained"] if e["module"] not in only]
    out["equivalents_used"] = [e for e in old["equivalents_used"] if e["module"] not in only]
    return out


def report(seconds: float | None, only: list[str] | None = None) -> dict:
    eq = json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else []
    st = statuses()
    carried = kept(only) if only else {"modules": {}, "survivors_unexplained": [], "equivalents_used": []}
    per: dict[str, Counter] = {m: Counter() for m in modules() if m not in carried["modules"]}
    unexplained, explained = list(carried["survivors_unexplained"]), list(carried["equivalents_used"])
    for name, s in sorted(st.items()):
        mod = module_of(name)
        if mod in carried["modules"]:
            continue
        c = per.setdefault(mod, Counter())
        c["mutants"] += 1
        if s == "killed":
            c["killed"] += 1
        elif s == "timeout":
            c["timeout"] += 1
        elif s in ("survived", "no tests"):
            line, fn = changed_line(name), function_of(name)
            why = next((e["why"] for e in eq if e["module"] == mod and e["function"] == fn and e["line"] == line),
                       None)
            if why:
                c["equivalent"] += 1
                explained.append({"module": mod, "function": fn, "line": line, "why": why})
            else:
                c["survived" if s == "survived" else "no_tests"] += 1
                unexplained.append({"mutant": name, "module": mod, "function": fn, "status": s, "line": line})
        else:
            c[s.replace(" ", "_")] += 1
    mods = {m: {"sha256": sha256(m), **{k: per[m][k] for k in ("mutants", "killed", "timeout", "survived",
                                                                "no_tests", "equivalent")},
                **({"not_checked": per[m]["not_checked"]} if per[m]["not_checked"] else {})} for m in per}
    mods.update(carried["modules"])
    mods = {m: mods[m] for m in modules() if m in mods}
    total = Counter()
    for v in mods.values():
        total.update({k: v[k] for k in ("mutants", "killed", "timeout", "survived", "no_tests", "equivalent")})
    judged = total["mutants"] - total["equivalent"]
    score = 100 * (total["killed"] + total["timeout"]) / judged if judged else 0.0
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "tool": "mutmut " + subprocess.run([str(MUTMUT), "--version"], capture_output=True,
                                               text=True).stdout.split()[-1],
            "seconds": seconds, "run": sorted(only) if only else "all", "modules": mods, "mutants": total["mutants"], "killed": total["killed"],
            "timeout": total["timeout"], "equivalent": total["equivalent"], "score_pct": round(score, 1),
            "survivors_unexplained": unexplained, "equivalents_used": explained}


@contextlib.contextmanager
def narrowed(only: list[str] | None, tests: list[str] | None):
    """With --only, mutmut is configured for those modules alone (and --tests) while it runs: the modules not
    re-run are neither copied with trampolines nor slowed by them, and are carried over instead. pyproject.toml
    is put back as it was afterwards, whatever happens."""
    if not only:
        yield
        return
    path = ROOT / "pyproject.toml"
    text = path.read_text()
    new = re.sub(r"^only_mutate = \[.*?\]", "only_mutate = " + json.dumps(only), text, count=1, flags=re.S | re.M)
    if tests:
        new = re.sub(r"^pytest_add_cli_args_test_selection = \[.*?\]",
                     "pytest_add_cli_args_test_selection = " + json.dumps(tests), new, count=1, flags=re.S | re.M)
    path.write_text(new)
    try:
        yield
    finally:
        path.write_text(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--report-only", action="store_true", help="read the last run's results, run nothing")
    ap.add_argument("--tests", nargs="+", metavar="TEST_FILE",
                    help="with --only: the tests mutmut runs (default: [tool.mutmut]'s selection)")
    ap.add_argument("--only", nargs="+", metavar="MODULE",
                    help="mutate only these modules (paths as [tool.mutmut] names them); every other module's "
                         "entry is carried over from the committed report, which must have measured it as it is")
    a = ap.parse_args(argv)
    only = a.only
    if only:
        unknown = sorted(set(only) - set(modules()))
        if unknown:
            ap.error(f"not configured in [tool.mutmut]: {unknown}")
        kept(only)                                   # fail before a long run, not after it
    seconds = None
    if not a.report_only:
        t0 = time.perf_counter()
        names = [m[:-len(".py")].replace("/", ".") + ".*" for m in only] if only else []
        with narrowed(only, a.tests):
            subprocess.run([str(MUTMUT), "run", "--max-children", str(a.jobs), *names], cwd=ROOT, check=False,
                           stdout=subprocess.DEVNULL)
        seconds = round(time.perf_counter() - t0, 1)
    rep = report(seconds, only)
    unchecked = {m: v["not_checked"] for m, v in rep["modules"].items() if v.get("not_checked")}
    if unchecked:                               # a run cut short (or one that never started) is not a report
        print(f"mutation: mutants not checked {unchecked}: the run did not finish; "
              f"{REPORT.relative_to(ROOT)} left as it was", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(rep, indent=1, ensure_ascii=False) + "\n")
    print(f"{'module':<36} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'no tests':>8} {'equiv':>5}")
    for m, v in rep["modules"].items():
        print(f"{m:<36} {v['mutants']:>7} {v['killed']:>6} {v['timeout']:>7} {v['survived']:>8} {v['no_tests']:>8} "
              f"{v['equivalent']:>5}")
    print(f"score {rep['score_pct']} % of {rep['mutants']} mutants ({rep['equivalent']} equivalent); "
          f"{len(rep['survivors_unexplained'])} survivors unexplained; {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
