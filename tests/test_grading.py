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


fx = grading.fixtures()          # the grader's own test submissions (lab_solutions/lab_fixtures.py)


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
    for name in fx.FIXTURES:
        fx.make_fixture(assigned.autograder, name, subs / f"{name}.ipynb")
    (subs / "broken.ipynb").write_text("this is not a notebook")
    path, rows, _ = grading.grade_folder(subs, tmp_path / "out", jobs=2)
    by = {r.learner: r for r in rows}
    full = by["ada"].points
    assert by["ada"].total == by["ada"].out_of == 20 and by["blank"].total == 0
    for name, (_, _, lost) in fx.FIXTURES.items():
        got = {q: full[q] - by[name].points[q] for q in grading.tests().QUESTIONS if full[q] != by[name].points[q]}
        assert got == lost, (name, got)
    assert by["broken"].status == "not a notebook" and by["broken"].total == 0
    with path.open() as f:
        table = {r["learner"]: r for r in csv.DictReader(f)}
    assert table["ada"]["total"] == "20" and table["ada"]["possible"] == "20" and table["blank"]["total"] == "0"
    fb = (tmp_path / "out" / "feedback" / "blank.txt").read_text()
    assert "q1: 0 / 2" in fb and "`table` not answered yet" in fb and "Traceback" not in fb
    assert "lab.table(step)" not in fb and "def q1" not in fb and "passed" not in fb   # no test code, no false pass
    raised = (tmp_path / "out" / "feedback" / "raises_in_step_5.txt").read_text()
    assert "your cell raised RuntimeError: unfinished" in raised and "`axes` not answered yet" in raised
    assert "q6: 3 / 3" in raised                                     # one step's error costs that step only


def test_every_cheat_and_hard_case_gets_what_it_deserves(assigned, tmp_path):
    """In the sandbox: the six cheats score 0, a hang in step 5 costs step 5, a notebook without otter's metadata
    and one with the right values typed in (to 4 significant figures) score full marks."""
    t = grading.tests()
    ref = t.references()
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in fx.CHEATS:
        fx.make_cheat(name, grading.LEARNER, assigned.autograder, subs / f"{name}.ipynb", ref)
    _, rows, _ = grading.grade_folder(subs, tmp_path / "out", jobs=2, timeout=15)
    got = {r.learner: r.total for r in rows}
    assert got == {k: v[3] for k, v in fx.CHEATS.items()}, got
    hang = (tmp_path / "out" / "feedback" / "hang_in_step_5.txt").read_text()
    assert "q5: 0 / 2" in hang and "ran past its time limit" in hang


def test_without_the_sandbox_the_cheats_are_real_and_grading_refuses(assigned, tmp_path, monkeypatch):
    """The cheat that reads the instructor's files is not a straw man: graded without the sandbox it takes full
    marks. So where there is no sandbox, grading refuses unless told to go ahead."""
    t = grading.tests()
    subs = tmp_path / "subs"
    subs.mkdir()
    fx.make_cheat("read_the_instructors_files", grading.LEARNER, assigned.autograder,
                       subs / "cheat.ipynb", t.references())
    _, rows, _ = grading.grade_folder(subs, tmp_path / "out", jobs=1, sandboxed=False)
    assert rows[0].total >= 0.9 * rows[0].out_of == 18     # the master, from the folder and from git history
    monkeypatch.setattr(grading.sandbox, "available", lambda: "bwrap is not installed")
    with pytest.raises(grading.GradingError, match="--no-sandbox"):
        grading.grade_folder(subs, tmp_path / "out2")


def test_the_kept_benchmark_graded_30_within_4_minutes_on_two_cores_in_the_sandbox():
    rep = graded.recorded_report()
    assert rep["submissions"] == 30 and rep["cpus"] <= 2 and rep["seconds"] <= 240 and rep["sandbox"] == "bubblewrap"
    assert rep["master_score_pct"] == 100 and rep["blank_score_pct"] == 0 and rep["statuses"] == ["ok"]
    for name, f in rep["fixtures"].items():
        assert f["lost"] == f["expected_lost"] == fx.FIXTURES[name][2], name
    for name, c in rep["cheats"].items():
        assert c["got"] == c["deserves"] == fx.CHEATS[name][3], name
    assert rep["cheat_max_score_pct"] <= 10 and rep["poison_isolated"] and rep["hang_partial_credit"]


def test_the_sandbox_hides_the_instructors_files_and_the_network(tmp_path):
    from launchlab.core import paths
    from launchlab.faces import sandbox
    assert sandbox.available() is None, sandbox.available()
    import subprocess
    import sys
    probe = ("import os, socket\n"
             f"print([os.path.exists(p) for p in ({str(paths.ROOT / 'lab_solutions')!r}, {str(paths.ROOT / '.git')!r},"
             f" {str(paths.ROOT / 'tests')!r})])\n"
             "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=3); print('net')\n"
             "except OSError:\n    print('no net')\n"
             f"try:\n    open({str(paths.ROOT / 'launchlab' / 'x.py')!r}, 'w'); print('wrote')\n"
             "except OSError:\n    print('read-only')\n"
             "print(sorted(k for k in os.environ if not k.startswith('LC_')))\n")
    out = subprocess.run(sandbox.command(tmp_path, [sys.executable, "-c", probe]), capture_output=True,
                         text=True, timeout=60).stdout.split("\n")
    assert out[:3] == ["[False, False, False]", "no net", "read-only"], out
    assert set(eval(out[3])) <= {"PATH", "HOME", "LAUNCHLAB_MODE", "PYTHONPATH", "MPLBACKEND", "PWD"}, out[3]
