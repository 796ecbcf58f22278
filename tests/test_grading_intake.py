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


def test_what_may_be_a_notebook_is_decided_by_two_linear_looks_in_the_grader():
    nb = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    assert intake.notebook_or_why(nb) is None
    assert intake.notebook_or_why(b"  \n\t" + nb) is None                       # blanks before the object
    assert intake.notebook_or_why(json.dumps({"worksheets": [], "nbformat": 3}).encode()) is None   # nbformat 3
    for not_an_object in (b"[1, 2]", b"\xff\xfe", b"not json", b"", b"   ", b'"{"'):
        assert intake.notebook_or_why(not_an_object) == "not a notebook (not a JSON object)"
    assert intake.notebook_or_why(b'{"cells": ' + b"[" * 63 + b"]" * 63 + b"}") is None           # 64 deep
    deep = b'{"cells": [' + b"[" * 63 + b"]" * 63 + b"]}"                                             # 65 deep
    assert intake.notebook_or_why(deep) == "not a notebook (nested deeper than 64 levels)"


def test_the_collector_says_not_a_notebook_from_inside_for_json_that_is_not_one(tmp_path):
    import io
    from launchlab.faces import collect
    for i, text in enumerate(('{"cells": 5}', '{"cells": [', "{not json", '{"worksheets": "x", "nbformat": 3}')):
        p = tmp_path / f"n{i}.ipynb"
        p.write_text(text)
        sink = io.StringIO()
        collect.collect(str(p), sink, ["x"])
        got = runner._lines(sink.getvalue().encode())
        assert len(got) == 1 and got[0]["final"] is True and got[0]["answers"] == {}
        assert isinstance(got[0]["not_a_notebook"], str) and got[0]["not_a_notebook"]


# ------------------------------------------------------------------ the grade book
@pytest.mark.parametrize("name", ["=HYPERLINK(\"x\",1)", "+1", "-1", "@SUM(A1)", "\tx"])
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


# ------------------------------------------------------------------ control characters made visible (issue 56)
def test_every_c0_and_c1_control_is_shown_as_an_escape_and_nothing_else_is_touched():
    for o in range(0x20):                              # C0: all but tab; newline only where allowed
        ch = chr(o)
        want = ch if ch == "\t" else f"\\x{o:02x}"
        assert gradebook.visible(ch) == want
        assert gradebook.visible(ch, newlines=True) == (ch if ch in "\t\n" else want)
    for o in range(0x7F, 0xA0):                        # DEL and C1 (0x9B is a one-byte CSI)
        assert gradebook.visible(chr(o)) == f"\\x{o:02x}"
    for ch in "\u202e\u2066\u200f\u061c":                # bidirectional controls
        assert gradebook.visible(ch) == f"\\u{ord(ch):04x}"
    for ok in (" ", "~", "\xa0", "é", "→", "\u2028x"[1:], "Ωmega", "日本"):   # first printable, last ASCII, NBSP, ...
        assert gradebook.visible(ok) == ok


def test_a_name_or_status_that_would_move_the_cursor_is_one_plain_field():
    name = "\x1b[1A\x1b[2K\rada,20,20\x1b]0;pwned\x07\n=1+1"
    field = gradebook.spreadsheet_safe(name)
    assert field == "\\x1b[1A\\x1b[2K\\x0dada,20,20\\x1b]0;pwned\\x07\\x0a=1+1"
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in field)
    assert gradebook.spreadsheet_safe("\x1b=1") == "\\x1b=1"          # escaped first: no longer a formula's start
    assert gradebook.spreadsheet_safe("=\x1b") == "'=\\x1b"


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


def test_control_characters_are_counted_as_a_terminal_would_act_on_them():
    from launchlab.faces import grading
    assert grading.control_chars_in("plain text\twith a tab\nand a newline\r\n") == 0   # the CSV's own line end
    assert grading.control_chars_in("a\rb") == 1 and grading.control_chars_in("\r") == 1     # a lone CR moves
    assert grading.control_chars_in("\x1b[2J\x07\x00\x7f\x9b\u202e") == 6
    assert grading.control_chars_in("\x1f \x20 ~ \xa0 é") == 1                  # 0x1F is the last C0; 0xA0 is not
    assert grading.control_chars_in("a\r\nb\r\n") == 0 and grading.control_chars_in("a\r\rb") == 2   # CR LF only
    assert grading.control_chars_in("\t\x1b\n\x07X") == 2                     # counted after a tab or newline too
    assert grading.control_chars_in(gradebook.visible("\x1b]0;t\x07\r\n\u2066", newlines=True)) == 0


def test_the_limits_statement_says_each_limit_and_whether_it_holds():
    from launchlab.faces import grading
    held = [("memory 3072 MiB per submission (x)", False), ("file size 256 MiB per file (RLIMIT_FSIZE)", True)]
    assert grading.limits_statement(held) == ("limits of each submission here:\n"
                                              "  DOES NOT HOLD: memory 3072 MiB per submission (x)\n"
                                              "  holds: file size 256 MiB per file (RLIMIT_FSIZE)\n")
    assert grading.limits_statement([]) == "limits of each submission here:\n"
