"""The lab's grading (otter-grader): the committed learner copy is what `otter assign` makes of the master,
the master scores full marks, the blank copy zero, each wrong submission loses exactly its points, a file that
is not a notebook costs only its own row, and the kept 30-submission benchmark is within its budget."""
import csv
import json
import shutil

import pytest

from launchlab.faces import grading
from launchlab.sections.s09_lab import graded

otter = pytest.importorskip("otter", reason="otter-grader is the [grade] extra (make test installs it)")


@pytest.fixture(scope="module")
def assigned(tmp_path_factory):
    return grading.assign(tmp_path_factory.mktemp("dist") / "dist")


def test_the_committed_learner_copy_does_not_drift_from_the_master(assigned):
    assert grading.drift(grading.LEARNER, assigned.student) == []
    learner = json.loads(grading.LEARNER.read_text())
    src = "".join("".join(c["source"]) for c in learner["cells"])
    assert "# SOLUTION" not in src and "BEGIN SOLUTION" not in src and 'claim = "bit-identical"' not in src
    tests = json.dumps(learner["metadata"]["otter"]["tests"])
    assert "test_q1_shape" in tests and "test_q1_values" not in tests          # public tests only



def test_a_folder_grades_into_a_csv_with_exact_points(assigned, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(assigned.autograder, subs / "ada.ipynb")
    shutil.copy(grading.LEARNER, subs / "blank.ipynb")
    for name in grading.FIXTURES:
        grading.make_fixture(assigned.autograder, name, subs / f"{name}.ipynb")
    (subs / "broken.ipynb").write_text("this is not a notebook")
    path, rows, _ = grading.grade_folder(subs, tmp_path / "out", jobs=2, ag_zip=assigned.zip)
    by = {r.learner: r for r in rows}
    full = by["ada"].points
    assert by["ada"].total == by["ada"].out_of == 18 and by["blank"].total == 0
    for name, (_, _, lost) in grading.FIXTURES.items():
        got = {q: full[q] - by[name].points[q] for q in grading.QUESTIONS if full[q] != by[name].points[q]}
        assert got == lost, (name, got)
    assert by["broken"].status == "not a notebook" and by["broken"].total == 0
    with path.open() as f:
        table = {r["learner"]: r for r in csv.DictReader(f)}
    assert table["ada"]["total"] == "18" and table["ada"]["possible"] == "18" and table["blank"]["total"] == "0"
    fb = (tmp_path / "out" / "feedback" / "blank.txt").read_text()
    assert "q1: 0 / 2" in fb and "Test case failed" in fb
    assert "test_q1_values" not in fb and "lab.table(step)" not in fb           # hidden tests' code stays out


def test_the_kept_benchmark_graded_30_within_3_minutes_on_two_cores():
    rep = graded.recorded_report()
    assert rep["submissions"] == 30 and rep["cpus"] <= 2 and rep["seconds"] <= 180
    assert rep["master_score_pct"] == 100 and rep["blank_score_pct"] == 0 and rep["statuses"] == ["ok"]
    for name, f in rep["fixtures"].items():
        assert f["lost"] == f["expected_lost"] == grading.FIXTURES[name][2], name


def test_a_submission_that_hangs_costs_its_own_row_and_the_next_is_graded(assigned, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    nb = json.loads(assigned.autograder.read_text())
    for c in nb["cells"]:
        if "".join(c["source"]).startswith("from launchlab.faces.banner import banner"):
            c["source"] = "import time\ntime.sleep(10_000)\n" + "".join(c["source"])
    (subs / "a_hangs.ipynb").write_text(json.dumps(nb))
    shutil.copy(assigned.autograder, subs / "b_after.ipynb")
    _, rows, _ = grading.grade_folder(subs, tmp_path / "out", jobs=1, timeout=20, ag_zip=assigned.zip)
    by = {r.learner: r for r in rows}
    assert by["a_hangs"].status == "timeout after 20 s" and by["a_hangs"].total == 0
    assert by["b_after"].status == "ok" and by["b_after"].total == 18
