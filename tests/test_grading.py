"""The lab's grading (otter-grader): the committed learner copy is what `otter assign` makes of the master,
the master scores full marks, the blank copy zero, each wrong submission loses exactly its points, a file that
is not a notebook costs only its own row, and the kept 30-submission benchmark is within its budget."""
import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from launchlab.faces import grading
from launchlab.sections.s09_lab import graded

from conftest import need

sandboxed = pytest.mark.needs("sandbox")         # grading runs every submission in bubblewrap


@pytest.fixture(scope="module")
def assigned(tmp_path_factory):
    need("otter")                                # otter assign makes the learner copy the tests start from
    return grading.assign(tmp_path_factory.mktemp("dist") / "dist")


fx = grading.fixtures()          # the grader's own test submissions (lab_solutions/lab_fixtures.py)

@pytest.mark.slow                                # otter assign (~25 s)

def test_the_committed_learner_copy_does_not_drift_from_the_master(assigned):
    assert grading.drift(grading.LEARNER, assigned.student) == []
    learner = json.loads(grading.LEARNER.read_text())
    src = "".join("".join(c["source"]) for c in learner["cells"])
    assert "# SOLUTION" not in src and "BEGIN SOLUTION" not in src and 'claim = "bit-identical"' not in src
    tests = json.dumps(learner["metadata"]["otter"]["tests"])
    assert "test_q1_shape" in tests and "test_q1_values" not in tests          # public tests only



@pytest.mark.slow                                # a class graded (~35 s)
@sandboxed
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
    assert by["broken"].status.startswith("not a notebook") and by["broken"].total == 0
    with path.open() as f:
        table = {r["learner"]: r for r in csv.DictReader(f)}
    assert table["ada"]["total"] == "20" and table["ada"]["possible"] == "20" and table["blank"]["total"] == "0"
    fb = (tmp_path / "out" / "feedback" / "blank.txt").read_text()
    assert "q1: 0 / 2" in fb and "`table` not answered yet" in fb and "Traceback" not in fb
    assert "lab.table(step)" not in fb and "def q1" not in fb and "passed" not in fb   # no test code, no false pass
    raised = (tmp_path / "out" / "feedback" / "raises_in_step_5.txt").read_text()
    assert "your cell raised RuntimeError: unfinished" in raised and "`axes` not answered yet" in raised
    assert "q6: 3 / 3" in raised                                     # one step's error costs that step only


@pytest.mark.slow                                # every cheat graded (~60 s)
@sandboxed
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

@pytest.mark.slow                                # otter assign and a grading (~20 s)

def test_without_the_sandbox_the_cheats_are_real_and_grading_refuses(assigned, tmp_path, monkeypatch):
    """The cheat that reads the instructor's files is not a straw man: graded without the sandbox it takes every
    point the notebook's answers carry -- all but the four the grader earns by re-running steps 6-7 itself, whose
    cells the cheat left blank (16 of 20). So where there is no sandbox, grading refuses unless told to go ahead."""
    t = grading.tests()
    subs = tmp_path / "subs"
    subs.mkdir()
    fx.make_cheat("read_the_instructors_files", grading.LEARNER, assigned.autograder,
                       subs / "cheat.ipynb", t.references())
    _, rows, _ = grading.grade_folder(subs, tmp_path / "out", jobs=1, sandboxed=False)
    assert rows[0].total == 16 and rows[0].out_of == 20     # the master, from the folder and from git history
    assert rows[0].points["q6"] == 0 and rows[0].points["q7"] == 1     # its step-6/7 cells: the blank template
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


def test_the_kept_benchmark_graded_every_attack_as_root_and_each_held():
    """Issue 37's figures, as `summary --json` shows them under 09: measured inside the sandbox (no capability,
    not uid 0), the limits named with what enforces each, every attack of lab_fixtures.ATTACKS graded as root
    beside honest neighbours with what it deserves, the course tree unchanged, no run stopped by one of them."""
    rep = graded.recorded_report()
    run = rep["attack_run"]
    assert run["grader_uid"] == 0 and run["stopped"] is None and run["csv_rows"] == len(run["results"])
    assert run["course_tree_unchanged"] and run["changed_files"] == [] and run["escape_markers"] == []
    assert sorted(run["results"]) == sorted([*fx.ATTACKS, *fx.NEIGHBOURS])
    for kind, r in run["results"].items():
        want = fx.NEIGHBOURS[kind] if kind in fx.NEIGHBOURS else fx.ATTACKS[kind][2]
        assert r["held"] and r["got"] == r["deserves"] == want, (kind, r)
    assert rep["attack_fixtures"] == rep["attack_fixtures_held"] == len(fx.ATTACKS) >= 15
    assert rep["sandbox_capabilities"] == 0 and rep["sandbox_uid_nonzero"] is True
    assert rep["sandbox_probe"]["uid"] == 65534 and sorted(rep["sandbox_probe"]["writable"]) == ["/dev/shm", "/tmp"]
    assert rep["zero_knowledge_score_pct"] == 0 and rep["one_bad_submission_stops_run"] is False
    limits = " | ".join(rep["resource_limits"])
    for what in ("RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_CPU", "tmpfs at /tmp", "pids", "memory"):
        assert what in limits, what
    head = graded.headline(rep)
    assert {k: head[k] for k in ("sandbox_capabilities", "sandbox_uid_nonzero", "attack_fixtures",
                                 "attack_fixtures_held", "zero_knowledge_score_pct",
                                 "one_bad_submission_stops_run")} == {
        "sandbox_capabilities": 0, "sandbox_uid_nonzero": True, "attack_fixtures": len(fx.ATTACKS),
        "attack_fixtures_held": len(fx.ATTACKS), "zero_knowledge_score_pct": 0,
        "one_bad_submission_stops_run": False}
    assert head["resource_limits"] == rep["resource_limits"]
    # issue 56's figures, under 09
    assert head["grader_parse_seconds_max"] == max(rep["grader_parse_seconds"].values()) <= 2
    assert head["grader_peak_rss_mb_flood"] <= 1024 and head["control_chars_in_outputs"] == 0
    assert head["honest_variants"] == head["honest_variants_full_marks"] == len(fx.HONEST) >= 6
    assert head["neighbour_points_lost"] == 0 and rep["neighbours"] >= len(fx.ATTACKS)
    assert any("RLIMIT_AS" in x for x in head["limits_without_cgroups"])
    assert not any(x.startswith("memory") for x in head["limits_without_cgroups"])      # never without a cgroup
    measured = rep["limits_without_cgroups_measured"]
    assert measured["grader_as_root"]["processes_started"] == 400
    if "grader_as_an_ordinary_user" in measured:
        assert measured["grader_as_an_ordinary_user"]["processes_started"] < 256


@sandboxed
def test_the_sandbox_hides_the_instructors_files_and_the_network(tmp_path):
    from launchlab.core import paths
    from launchlab.faces import sandbox
    import subprocess
    import sys
    probe = ("import os, socket\n"
             f"print([os.path.exists(p) for p in ({str(paths.ROOT / 'lab_solutions')!r}, {str(paths.ROOT / '.git')!r},"
             f" {str(paths.ROOT / 'tests')!r})])\n"
             "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=3); print('net')\n"
             "except OSError:\n    print('no net')\n"
             f"try:\n    open({str(paths.ROOT / 'launchlab' / 'x.py')!r}, 'w'); print('wrote')\n"
             "except OSError:\n    print('read-only')\n"
             "print(sorted(k for k in os.environ if not k.startswith('LC_')))\n"
             "print(open('/tmp/work/submission.ipynb').read())\n")
    fd = os.memfd_create("submission.ipynb", 0)
    os.write(fd, b"the bytes handed in")
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        out = subprocess.run(sandbox.command([sys.executable, "-c", probe], submission_fd=fd), capture_output=True,
                             text=True, timeout=60, pass_fds=(fd,)).stdout.split("\n")
    finally:
        os.close(fd)
    assert out[:3] == ["[False, False, False]", "no net", "read-only"], out
    assert set(eval(out[3])) <= {"PATH", "HOME", "LAUNCHLAB_MODE", "PYTHONPATH", "MPLBACKEND", "PWD",
                                 "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}, out[3]
    assert out[4] == "the bytes handed in"


@sandboxed
def test_inside_the_sandbox_a_submission_is_nobody_with_no_capability_and_bounded():
    """What issue 37 found (uid 0 with every capability, remounts that worked, unbounded tmpfs) measured inside:
    uid and gid 65534, every capability set empty, a remount and a new user namespace refused, /tmp and /dev/shm
    its only writable places, and the limits it runs under named."""
    from launchlab.faces import runner
    got = runner.probe()
    assert got["uid"] == got["gid"] == got["euid"] == 65534, got
    assert set(got["caps"]) == {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} and got["capabilities"] == 0, got
    assert got["remount_refused"] and not got["new_user_namespace"], got
    # /tmp and /dev/shm are its own tmpfs; a checkout that lives under /tmp (a CI clone) has its root made on
    # that tmpfs too -- writable there, nothing of the host -- with its package bound read-only over it
    assert {"/dev/shm", "/tmp"} <= set(got["writable"]), got
    assert all(p in ("/dev/shm", "/tmp") or p.startswith("/tmp/") for p in got["writable"]), got
    assert not any(p.endswith("/launchlab") or p.startswith("/usr") for p in got["writable"]), got
    assert any("RLIMIT_AS" in x for x in got["limits"]) and any("tmpfs at /tmp" in x for x in got["limits"])


@sandboxed
def test_a_sandbox_that_cannot_start_a_kernel_stops_the_run_with_no_grades(tmp_path, monkeypatch):
    """A broken sandbox (here: the interpreter it is told to run is not there, as with an unresolved `.venv`
    symlink) must not grade everyone 0 with rc 0: nothing is graded, grades.csv is not written, rc 2."""
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(grading.LEARNER, subs / "blank.ipynb")
    real = grading.runner.sandbox.command
    monkeypatch.setattr(grading.runner.sandbox, "command",
                        lambda argv, **k: real(["/nonexistent/bin/python", *argv[1:]], **k))
    with pytest.raises(grading.GradingError, match="cannot run a notebook here"):
        grading.grade_folder(subs, tmp_path / "out")
    assert not (tmp_path / "out" / "grades.csv").exists()
    assert grading.main([str(subs), "--out", str(tmp_path / "out2")]) == 2
    assert not (tmp_path / "out2" / "grades.csv").exists()


@pytest.mark.slow                                # every attack graded (~3 min)
@sandboxed
def test_every_attack_is_graded_as_it_deserves_beside_honest_work(assigned, tmp_path):
    """Issue 37's attacks (lab_fixtures.ATTACKS), graded as this user (root in CI) in one folder with honest
    neighbours, two at a time: each gets what it deserves with the status it must have, the honest ones their
    right scores, every row is in grades.csv, and the course tree and every place an escape writes to are as
    they were."""
    from launchlab.faces import confine, sandbox
    c = confine.Confinement(sandbox.LIMITS)
    by = c.kind
    c.close()
    # an equal CPU share needs a cgroup: on a machine that offers none (the report says so), 40 busy processes
    # can starve the submission beside them, and that pair is not tried here (data/grading/report.json has it)
    skip = () if by != "none" else ("busy_neighbour_40_processes", "honest_master")
    if skip:
        import warnings
        warnings.warn("no cgroups here: the busy-neighbour attack is not tried (CPU share unbounded)")
    rep = grading.attacks(assigned, tmp_path / "attacks", jobs=2, cell_timeout=15, total_timeout=90, skip=skip)
    run = rep["attack_run"]
    wrong = {k: v for k, v in run["results"].items() if not v["held"]}
    assert wrong == {}, wrong
    assert run["stopped"] is None and run["csv_rows"] == len(run["results"]) and not rep["one_bad_submission_stops_run"]
    assert run["course_tree_unchanged"] and run["neighbours_right"]
    assert rep["attack_fixtures"] == rep["attack_fixtures_held"] == len([k for k in fx.ATTACKS if k not in skip])
    assert rep["attack_fixtures"] >= 15
    assert rep["zero_knowledge_score_pct"] == 0 and rep["sandbox_capabilities"] == 0 and rep["sandbox_uid_nonzero"]
    # issue 56: every attack has an honest neighbour graded beside it, and none lost a point; the grader's own
    # memory stayed bounded through the floods (the re-run's 1 GiB among them); nothing it wrote drives a terminal
    assert rep["neighbours"] >= rep["attack_fixtures"] and rep["neighbour_points_lost"] == 0
    assert rep["grader_peak_rss_mb_flood"] <= 1024 and rep["control_chars_in_outputs"] == 0


@pytest.mark.slow                                # six submissions graded (~1 min)
@sandboxed
def test_honest_variants_written_in_ordinary_ways_get_full_marks(assigned, tmp_path):
    """Issue 56: the master saved as nbformat 3, a constant or a helper from step 5, the plan as a lambda, extra
    cells, cells run out of order -- each graded as a class is, each 20 of 20 with its re-run clean."""
    got = grading.honest(assigned, tmp_path / "honest", jobs=2, cell_timeout=30)
    assert sorted(got) == sorted(fx.HONEST) and len(got) >= 6
    wrong = {k: v for k, v in got.items() if not (v["got"] == v["of"] == 20 and v["status"] == "ok")}
    assert wrong == {}, wrong


def test_each_honest_variant_is_what_it_says(tmp_path):
    """The variants are real: each differs from the master where it says (checked on the notebook's text)."""
    master = grading.MASTER.read_text()
    texts = {k: fx.make_honest(grading.MASTER, k, tmp_path / f"{k}.ipynb").read_text() for k in fx.HONEST}
    assert '"worksheets"' in texts["nbformat_3"] and '"nbformat": 3' in texts["nbformat_3"]
    assert "block = BLOCK" in texts["constant_from_step_5"] and "BLOCK = 32" in texts["constant_from_step_5"]
    assert "blocks_for(n, block, ept)" in texts["helper_from_step_5"]
    assert "plan = lambda n:" in texts["plan_as_lambda"] and "def plan(n)" not in texts["plan_as_lambda"]
    assert texts["extra_cells"].count('"cell_type"') == master.count('"cell_type"') + 4
    counts = [c.get("execution_count") for c in json.loads(texts["executed_out_of_order"])["cells"]
              if c["cell_type"] == "code"]
    assert counts == sorted(counts, reverse=True) and len(set(counts)) == len(counts)
    with pytest.raises(fx.FixtureError):
        fx.make_honest(grading.MASTER, "no_such_variant", tmp_path / "x.ipynb")


@sandboxed
def test_an_interpreter_named_through_a_symlinked_venv_runs_in_the_sandbox(tmp_path, monkeypatch):
    """Issue 37: with `.venv` a symlink, the grader runs the unresolved sys.executable; the sandbox must have the
    environment at the name as well as at its resolved path."""
    import subprocess
    import sys
    from launchlab.faces import sandbox
    link = tmp_path / "venv-link"
    link.symlink_to(Path(sys.prefix).resolve())
    exe = link / "bin" / Path(sys.executable).name
    monkeypatch.setattr(sys, "executable", str(exe))
    cmd = sandbox.command([str(exe), "-c", "import sys, launchlab; print(sys.prefix)"])
    assert [str(link.resolve()), str(link)] == [a for a in cmd if a in (str(link.resolve()), str(link))][-2:]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-500:]
