"""The learners' release (`make release`): the course without the instructor's material -- no lab solution,
hidden test, reference answer or grader fixture -- and every notebook still runs in it."""
import json
import os
import subprocess
import sys

import pytest

from launchlab.core import paths
from launchlab.faces import release


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return release.build(tmp_path_factory.mktemp("release") / "learner")


def test_the_release_holds_no_line_of_the_instructors_material(tree):
    assert not (tree / "lab_solutions").exists() and not (tree / "tests").exists()
    assert release.leaks(tree) == []
    assert (tree / "launchlab" / "sections" / "s10_self_check" / "key.json").exists()   # formative: it ships


def test_the_leak_scan_finds_a_solution_line_planted_in_the_release(tree, tmp_path):
    """The scan is not blind: one line of the master's solution, or of the hidden tests, is found wherever it
    is put."""
    planted = tmp_path / "planted"
    planted.mkdir()
    master = json.loads((paths.ROOT / "lab_solutions" / "09_lab_audit.ipynb").read_text())
    line = next(l for c in master["cells"] for l in "".join(c["source"]).splitlines() if l.startswith("verdict = "))
    (planted / "notes.py").write_text("x = 1\n" + line + "\n")
    tests_line = next(l.strip() for l in (paths.ROOT / "lab_solutions" / "lab_tests.py").read_text().splitlines()
                      if l.strip().startswith('"flagged": sorted('))
    (planted / "more.txt").write_text(tests_line + "\n")
    assert release.leaks(planted) == ["more.txt:1", "notes.py:2"]


@pytest.mark.slow                                   # every notebook executed in the release (~100 s)
def test_every_notebook_runs_in_the_release_without_the_instructors_folder(tree):
    code = ("import sys\n"
            "from launchlab.faces import course\n"
            "bad = []\n"
            "for p in course.notebooks():\n"
            "    try:\n"
            "        course.execute(p, timeout=300)\n"
            "    except Exception as e:\n"
            "        bad.append(f'{p.name}: {type(e).__name__}: {str(e)[-300:]}')\n"
            "print('\\n'.join(bad) or 'all ran')\n")
    env = dict(os.environ, PYTHONPATH=str(tree), LAUNCHLAB_MODE="replay")
    p = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().splitlines()[-1] == "all ran", p.stdout[-3000:]


def test_the_kept_report_says_no_leak():
    rep = json.loads(release.REPORT.read_text())
    assert rep["solution_leaks"] == 0 and rep["leaks"] == [] and "lab_solutions" not in rep["shipped"]


def _instructor(tmp_path, lines):
    d = tmp_path / "instructor"
    d.mkdir()
    (d / "answers.py").write_text("\n".join(lines) + "\n")
    return d


def test_a_solution_line_planted_in_a_notebook_cell_is_found(tmp_path):
    """Issue 43: the scan reads a notebook's cells, not its JSON (where a line is quoted and escaped)."""
    secret = "expected_blocks_per_wave = resident_per_sm * sm_count"
    ins = _instructor(tmp_path, [secret])
    tree = tmp_path / "tree"
    tree.mkdir()
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "source": ["x = 1\n", "    " + secret + "\n"]}]
    (tree / "lab.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert release.leaks(tree, ins) == ["lab.ipynb:2"]


def test_the_scan_s_length_threshold_is_inclusive_at_its_own_length(tmp_path):
    """A telling line of exactly MIN_LINE characters is a secret; one character shorter is not (too common)."""
    n = release.MIN_LINE
    at = "a = " + "b" * (n - 4)                     # exactly n characters, an assignment
    under = "c = " + "d" * (n - 5)                  # n - 1
    assert len(at) == n and len(under) == n - 1
    ins = _instructor(tmp_path, [at, under])
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "notes.py").write_text(at + "\n" + under + "\n")
    assert release.leaks(tree, ins) == ["notes.py:1"]
