"""The kept measurement of `make test` as a newcomer runs it (tools/clean_clone.py, issue 38): a fresh clone on a
2-CPU machine, set-up included, within 6 minutes, passing, with no bwrap on PATH, and none of its 15 slowest tests
over 10 s (those are marked slow: make test-slow). And the parsers that read pytest's output for it."""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import clean_clone  # noqa: E402
import pytest  # noqa: E402

kept = pytest.mark.needs("make_test_report")


@pytest.fixture(scope="module")
def report():
    return json.loads((ROOT / "data" / "tests" / "make_test.json").read_text())


@kept
def test_a_fresh_clones_make_test_passed_within_six_minutes_on_two_cpus(report):
    r = report
    assert r["rc"] == 0 and r["target"] == "make test" and r["tree_clean"]
    assert r["seconds"] <= 360 and r["seconds"] == max(r["seconds"], r["pytest_seconds"], r["setup_seconds"])
    assert r["clone_seconds"] + r["setup_seconds"] + r["pytest_seconds"] == pytest.approx(r["seconds"], abs=0.3)
    assert re.fullmatch(r"x86_64, 2 CPUs, Python 3\.\d+\.\d+", r["machine"]) and r["bwrap_on_path"] is None
    assert r["counts"]["passed"] > 1000 and not {"failed", "error", "errors"} & set(r["counts"])
    assert re.fullmatch(r"[0-9a-f]{40}", r["commit"])


@kept
def test_its_fifteen_slowest_tests_are_listed_and_none_is_over_ten_seconds(report):
    slow = report["slowest"]
    assert len(slow) == 15 and [s for s, _, _ in slow] == sorted((s for s, _, _ in slow), reverse=True)
    assert all(s <= 10 for s, _, _ in slow), slow[:3]
    assert all(phase in ("call", "setup", "teardown") for _, phase, _ in slow)


def test_pytests_durations_and_counts_are_read_as_printed():
    log = """..... [100%]
============================= slowest 3 durations ==============================
9.87s call     tests/test_a.py::test_x[1]
2.00s setup    tests/test_b.py::test_y
0.50s teardown notebooks/01_x.ipynb::Cell 3
=========================== short test summary info ============================
FAILED tests/test_c.py::test_z - AssertionError
1 failed, 1190 passed, 133 skipped, 2 deselected in 250.12s (0:04:10)"""
    assert clean_clone.durations(log) == [[9.87, "call", "tests/test_a.py::test_x[1]"],
                                          [2.0, "setup", "tests/test_b.py::test_y"],
                                          [0.5, "teardown", "notebooks/01_x.ipynb::Cell 3"]]
    assert clean_clone.counts(log) == {"failed": 1, "passed": 1190, "skipped": 133, "deselected": 2}
    assert clean_clone.durations("no durations here") == [] and clean_clone.counts("") == {}
