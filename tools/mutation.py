"""`make mutation`: mutmut over the course's logic, and a report a test can check (issue 27).

    python tools/mutation.py [--jobs N] [--report-only]

Runs `mutmut run` (the modules and tests are `[tool.mutmut]` in pyproject.toml), then reads every mutant's
status and, for each survivor, the line the mutant changed. A survivor is either killed by a new test or listed
in data/mutation/equivalent.json as equivalent, with the reason: matched by its module, its function and the
changed line as mutmut writes it, so a listing outlives mutmut's renumbering but not a change to that line.

Writes data/mutation/report.json: per module its sha256 (a test tells a stale report by it), mutants, killed,
survived, timeout, no tests, equivalent; the score (killed + timeout) / (mutants - equivalent); and every
survivor not explained. Prints a table last.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
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
MUTMUT = Path(sys.executable).with_name("mutmut")


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


def report(seconds: float | None) -> dict:
    eq = json.loads(EQUIVALENT.read_text()) if EQUIVALENT.exists() else []
    st = statuses()
    per: dict[str, Counter] = {m: Counter() for m in modules()}
    unexplained, explained = [], []
    for name, s in sorted(st.items()):
        mod = module_of(name)
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
                                                                "no_tests", "equivalent")}} for m in per}
    total = Counter()
    for v in per.values():
        total.update(v)
    judged = total["mutants"] - total["equivalent"]
    score = 100 * (total["killed"] + total["timeout"]) / judged if judged else 0.0
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "tool": "mutmut " + subprocess.run([str(MUTMUT), "--version"], capture_output=True,
                                               text=True).stdout.split()[-1],
            "seconds": seconds, "modules": mods, "mutants": total["mutants"], "killed": total["killed"],
            "timeout": total["timeout"], "equivalent": total["equivalent"], "score_pct": round(score, 1),
            "survivors_unexplained": unexplained, "equivalents_used": explained}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--report-only", action="store_true", help="read the last run's results, run nothing")
    a = ap.parse_args(argv)
    seconds = None
    if not a.report_only:
        t0 = time.perf_counter()
        subprocess.run([str(MUTMUT), "run", "--max-children", str(a.jobs)], cwd=ROOT, check=False,
                       stdout=subprocess.DEVNULL)
        seconds = round(time.perf_counter() - t0, 1)
    rep = report(seconds)
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
