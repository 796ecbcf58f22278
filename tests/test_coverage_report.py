"""The committed coverage report (`make coverage`, tools/coverage.py) is current and complete (issue 27): every
file of launchlab is measured or listed with the reason it is left out, the report matches the sources it
measured (a changed file makes it stale: run `make coverage`), it combines a dated GPU data file from the
H200, and launchlab is at least 80 % covered."""
import hashlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "data" / "coverage" / "report.json"


@pytest.fixture(scope="module")
def rep():
    assert REPORT.exists(), "no coverage report: run `make coverage`"
    return json.loads(REPORT.read_text())


def test_every_file_of_launchlab_is_measured_or_left_out_with_a_reason(rep):
    every = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "launchlab").rglob("*.py"))
    assert rep["never_imported"] == []
    assert all(isinstance(why, str) and len(why) > 20 for why in rep["omitted"].values())
    assert sorted(set(rep["files"]) | set(rep["omitted"])) == every


def test_the_report_is_not_stale(rep):
    stale = [f for f, v in rep["files"].items() if hashlib.sha256((ROOT / f).read_bytes()).hexdigest() != v["sha256"]]
    assert stale == [], f"changed since the coverage report (run `make coverage`): {stale}"


def test_the_totals_add_up_and_reach_80_percent(rep):
    files = rep["files"].values()
    assert rep["statements"] == sum(f["statements"] for f in files)
    assert rep["missing"] == sum(f["missing"] for f in files)
    assert rep["percent"] == pytest.approx(100 * (1 - rep["missing"] / rep["statements"]), abs=0.05)
    assert rep["percent"] >= 80


def test_the_gpu_run_is_a_dated_data_file_from_the_h200_and_its_log_is_kept(rep):
    m = re.fullmatch(r"(data/coverage/(\d{4}-\d{2}-\d{2})-h200\.coverage) \(the H200: pytest -m gpu\)",
                     rep["runs"]["gpu"])
    assert m and (ROOT / m.group(1)).exists()
    log = (ROOT / "data" / "gpu_runs" / f"{m.group(2)}-h200-gpu-tests.txt").read_text()
    assert re.search(r"\d+ passed", log) and " failed" not in log.splitlines()[-1]
