"""Taking submissions in (launchlab.faces.intake), the grade book (launchlab.faces.gradebook) and the answers
channel as the grader reads it (launchlab.faces.runner._lines): the promises issue 37 asks of them, at their
edges. No sandbox, no kernel: these run everywhere."""
import csv
import json
import os
from types import SimpleNamespace

import pytest

from launchlab.faces import gradebook, intake, runner


# ------------------------------------------------------------------ json_depth: linear, strings skipped
@pytest.mark.parametrize("text, depth", [
    (b"1", 0), (b"[]", 1), (b"[[], {}]", 2), (b'{"a": [{"b": []}]}', 4),
    (b'["[[[[", "{{{{"]', 1),                        # brackets inside strings are text
    (b'["\\"[[[", "]]]\\\\"]', 1),                    # an escaped quote does not end the string
])
def test_json_depth_counts_only_the_structure(text, depth):
    assert intake.json_depth(text) == depth


def test_json_depth_stops_one_past_its_limit():
    assert intake.json_depth(b"[" * 64 + b"]" * 64, 64) == 64
    assert intake.json_depth(b"[" * 65 + b"]" * 65, 64) == 65
    assert intake.json_depth(b"[" * 200_000, 64) == 65           # the file: a scan, not a recursion


# ------------------------------------------------------------------ intake: a regular file, checked on its descriptor
def test_a_regular_file_is_taken_whole(tmp_path):
    p = tmp_path / "a.ipynb"
    p.write_bytes(b"x" * 10)
    assert intake.intake(p, cap=10) == b"x" * 10                 # at the cap: taken
    p.write_bytes(b"x" * 11)
    assert intake.intake(p, cap=10).startswith("refused: ") and "over the" in intake.intake(p, cap=10)


def test_links_fifos_folders_and_missing_files_are_refused(tmp_path):
    good = tmp_path / "good.ipynb"
    good.write_text("{}")
    (tmp_path / "abs.ipynb").symlink_to(good)
    (tmp_path / "rel.ipynb").symlink_to("good.ipynb")
    (tmp_path / "zero.ipynb").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.ipynb")
    (tmp_path / "dir.ipynb").mkdir()
    for name in ("abs", "rel", "zero"):
        assert intake.intake(tmp_path / f"{name}.ipynb").startswith("refused: a symbolic link"), name
    assert intake.intake(tmp_path / "fifo.ipynb").startswith("refused: a FIFO")      # and it returned: no hang
    assert intake.intake(tmp_path / "dir.ipynb").startswith("refused: a directory")
    assert intake.intake(tmp_path / "gone.ipynb").startswith("refused: it could not be read")


def test_a_hard_link_is_taken_only_when_every_name_is_in_the_folder(tmp_path):
    subs, elsewhere = tmp_path / "subs", tmp_path / "elsewhere"
    subs.mkdir()
    elsewhere.mkdir()
    (elsewhere / "master.ipynb").write_text("{}")
    os.link(elsewhere / "master.ipynb", subs / "copy.ipynb")
    (subs / "ada.ipynb").write_text("{}")
    os.link(subs / "ada.ipynb", subs / "ada_again.ipynb")
    found = dict((p.name, n) for p, n in intake.submissions(subs))
    assert found == {"ada.ipynb": 2, "ada_again.ipynb": 2, "copy.ipynb": 1}
    assert intake.intake(subs / "copy.ipynb", found["copy.ipynb"]).startswith("refused: a hard link")
    assert intake.intake(subs / "ada.ipynb", found["ada.ipynb"]) == b"{}"             # two learners, one file


def test_what_is_a_notebook():
    nb = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    assert intake.notebook_or_why(nb) is None
    assert intake.notebook_or_why(json.dumps({"worksheets": [], "nbformat": 3}).encode()) is None   # nbformat 3
    assert intake.notebook_or_why(b"[1, 2]") == "not a notebook (no cells)"
    assert intake.notebook_or_why(b'{"cells": 5}') == "not a notebook (no cells)"
    assert intake.notebook_or_why(b"\xff\xfe") == "not a notebook"
    assert intake.notebook_or_why(b"not json") == "not a notebook"
    deep = b'{"cells": [' + b"[" * 70 + b"]" * 70 + b"]}"
    assert intake.notebook_or_why(deep) == "not a notebook (nested deeper than 64 levels)"


# ------------------------------------------------------------------ the grade book
@pytest.mark.parametrize("name", ["=HYPERLINK(\"x\",1)", "+1", "-1", "@SUM(A1)", "\tx", "\rx"])
def test_a_name_a_spreadsheet_would_run_is_text(name):
    assert gradebook.spreadsheet_safe(name) == "'" + name


@pytest.mark.parametrize("name", ["ada", "a=b", "", "1+1", "'quoted"])
def test_other_names_are_left_as_they_are(name):
    assert gradebook.spreadsheet_safe(name) == name


def test_file_names_are_plain_distinct_and_never_a_path():
    assert gradebook.file_name("ada_lovelace-2") == "ada_lovelace-2"
    odd = ["../../etc/x", "a/b", "a\\b", ".hidden", "a:b", "a?b", "a_b?", "é\udcff"]
    names = [gradebook.file_name(n) for n in odd]
    assert all("/" not in n and not n.startswith(".") and n for n in names)
    assert len(set(names)) == len(odd) and gradebook.file_name("a?b") != gradebook.file_name("a_b")


def test_the_sheet_has_each_row_as_soon_as_it_is_added(tmp_path):
    def row(name, total):
        return SimpleNamespace(learner=name, points={"q1": total}, total=total, out_of=2.0, status="ok")
    sheet = gradebook.Sheet(tmp_path / "grades.csv", ("q1",))
    sheet.add(row("=bob", 1.0))
    with (tmp_path / "grades.csv").open(newline="") as f:         # before the run ends
        assert list(csv.reader(f)) == [["learner", "q1", "total", "possible", "status"], ["'=bob", "1", "1", "2", "ok"]]
    sheet.add(row("ada", 2.0))
    sheet.close([row("=bob", 1.0), row("ada", 2.0)])
    with (tmp_path / "grades.csv").open(newline="") as f:
        assert [r[0] for r in csv.reader(f)] == ["learner", "'=bob", "ada"]      # in the learners' order
    assert not (tmp_path / "grades.csv.tmp").exists()


# ------------------------------------------------------------------ the answers channel, as read
def test_only_json_objects_with_answers_are_read_from_the_channel():
    good = {"answers": {"x": {"value": 1}}, "events": [], "final": True}
    buf = b"\n".join([b"[1, 2, 3]", b'{"answers": [1]}', b'"text"', b"\xff\xfe", b"{not json",
                      b'{"answers": {"r": ' + b"[" * 100 + b"]" * 100 + b"}}", json.dumps(good).encode(), b""])
    assert runner._lines(buf) == [good]
    assert runner._lines(b"") == [] and runner._lines(b'{"answers": {}}') == [{"answers": {}}]


def test_a_limit_already_lower_is_kept_not_raised():
    """confine sets its rlimits as the grader's user: a hard limit set lower by whoever runs the grader (a
    scheduler, mutmut's workers) cannot be raised without CAP_SYS_RESOURCE, and must be kept, not crash the
    run (it did: every isolated scoring failed under mutmut on the GPU machine). Tried with that capability
    dropped and RLIMIT_CPU at 30 s; and without a lower limit, confine's own 65 s holds."""
    import shutil
    import subprocess
    import sys
    from launchlab.faces import confine, sandbox
    setpriv = shutil.which("setpriv")
    if not setpriv or os.geteuid() != 0:
        pytest.skip("needs setpriv and root to drop CAP_SYS_RESOURCE")
    c = confine.Confinement(sandbox.Limits(cpu_seconds=65), use_cgroups=False)
    cmd = c.wrap([sys.executable, "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_CPU))"])
    low = subprocess.run([setpriv, "--bounding-set", "-sys_resource", "--inh-caps", "-sys_resource", "sh", "-c",
                          'ulimit -t 30; exec "$@"', "sh", *cmd], capture_output=True, text=True, timeout=60)
    assert (low.returncode, low.stdout.strip()) == (0, "(30, 30)"), low.stderr[-300:]
    free = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert free.stdout.strip() == "(65, 65)", free.stderr[-300:]
