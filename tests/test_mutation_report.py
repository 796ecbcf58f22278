"""The committed mutation report (`make mutation`, data/mutation/report.json) is current and complete: it covers
exactly the modules pyproject's [tool.mutmut] names, at their present contents (sha256), leaves no survivor
unexplained, and every listed equivalent still matches a survivor (a stale excuse fails)."""
import hashlib
import json
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
REPORT = json.loads((ROOT / "data" / "mutation" / "report.json").read_text())
EQUIVALENT = json.loads((ROOT / "data" / "mutation" / "equivalent.json").read_text())


def test_the_report_covers_the_configured_modules_as_they_are_now():
    configured = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"]
    assert sorted(REPORT["modules"]) == sorted(configured)
    for module, v in REPORT["modules"].items():
        now = hashlib.sha256((ROOT / module).read_bytes()).hexdigest()
        assert v["sha256"] == now, f"{module} changed since the last `make mutation`: run it again"


def test_every_survivor_is_killed_or_explained():
    assert REPORT["survivors_unexplained"] == []
    for v in REPORT["modules"].values():
        assert v["mutants"] == v["killed"] + v["timeout"] + v["survived"] + v["no_tests"] + v["equivalent"]
        assert v["survived"] == v["no_tests"] == 0


def test_every_listed_equivalent_is_in_use_and_says_why():
    """An entry for a module the report covers must match a survivor; one for a module not yet configured (its
    survivors still being worked through) waits, but still says why."""
    used = {(e["module"], e["function"], e["line"]) for e in REPORT["equivalents_used"]}
    for e in EQUIVALENT:
        if e["module"] in REPORT["modules"]:
            assert (e["module"], e["function"], e["line"]) in used, e
        assert len(e["why"]) > 40, e


def test_the_score():
    judged = REPORT["mutants"] - REPORT["equivalent"]
    assert REPORT["score_pct"] == round(100 * (REPORT["killed"] + REPORT["timeout"]) / judged, 1)
    assert REPORT["score_pct"] >= 85


# What issue 27 asks mutation testing to cover: the course's logic, module by module.
SCOPE = ["launchlab/core/occupancy.py", "launchlab/core/launch.py", "launchlab/core/diagnosis.py",
         "launchlab/kernels/splits.py", "launchlab/core/dumps.py", "launchlab/core/exercise.py",
         "launchlab/faces/grading.py", "lab_solutions/lab_tests.py", "launchlab/sections/s09_lab/lab.py",
         "lab_solutions/lab_reference.py", "launchlab/core/gates.py", "launchlab/core/recordings.py",
         "launchlab/core/floatbits.py", "launchlab/core/timing.py"]


def test_every_module_of_the_course_logic_is_covered():
    assert sorted(REPORT["modules"]) == sorted(SCOPE)


def test_what_is_left_out_of_mutation_says_why():
    """A function kept out of mutation (`# pragma: no mutate block`) is live-only, the sandboxed run, or display
    that nbval compares -- and says which, on its own line."""
    import re
    kept_out = {}
    for module in SCOPE:
        for n, line in enumerate((ROOT / module).read_text().splitlines(), 1):
            if "pragma: no mutate" in line:
                m = re.search(r"# pragma: no mutate(?: block)? \((live only|not scoring|display: nbval compares it)\)$",
                              line)
                assert m, f"{module}:{n} keeps code out of mutation without one of the reasons: {line.strip()}"
                kept_out[f"{module}:{n}"] = m.group(1)
    assert sorted(set(kept_out.values())) == ["display: nbval compares it", "live only", "not scoring"]
