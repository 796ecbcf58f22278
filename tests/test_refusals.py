"""A refusal as a learner meets it in a notebook (issue 58, launchlab.core.refusal, measured by
launchlab.faces.refusals): the course's errors as a
short box with the traceback folded under it, any other error as IPython shows it, the kernel still working --
tried in real kernels (nbclient), and the committed measure of every your-turn cell and the lab's plan written
wrong (data/reading/refusals.json), which the summary's hands.refusal_lines_max reads."""
import json
import re

import nbformat
import pytest
from nbclient import NotebookClient

from launchlab.audit import AuditError
from launchlab.core import launch, refusal
from launchlab.faces import hands, refusals
from launchlab.kernels import rms_norm

REPORT = refusals.load()


def run_cells(tmp_path, *sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb.cells


def test_a_refusal_is_a_box_an_error_line_and_the_kernel_keeps_working(tmp_path, monkeypatch):
    monkeypatch.setenv("LAUNCHLAB_MODE", "replay")
    cells = run_cells(tmp_path,
                      "import launchlab\nfrom launchlab.sections.s02_width.turn import TURN as turn\n"
                      "turn.launch(0, 128)",
                      "int('x')",
                      "run = turn.launch(1, 128)\nprint(run.shape.grid)")
    box, err = cells[0].outputs
    assert box["output_type"] == "display_data" and "launchlab-refusal" in box["data"]["text/html"]
    assert box["data"]["text/plain"].split("\n") == [
        "refused before anything reached the GPU: LaunchError",
        "grid.x = 0: a grid needs at least one block on every axis", refusal.KEEPS]
    assert "<details>" in box["data"]["text/html"] and "Traceback (most recent call last)" in box["data"]["text/html"]
    assert err["output_type"] == "error" and err["ename"] == "LaunchError" and len(err["traceback"]) == 1
    assert refusals.visible_lines(cells[0].outputs) == 4
    # the complement: a ValueError that is not the course's keeps IPython's own traceback, and no box
    (other,) = cells[1].outputs
    assert other["ename"] == "ValueError" and len(other["traceback"]) > 2
    assert "(1, 1, 1)" in "".join(cells[2].outputs[0]["text"])             # the kernel still launches


def test_the_box_escapes_what_it_shows_and_wraps_at_the_course_width():
    e = rms_norm.RMSNormError("a <script>alert(1)</script> & a very long sentence " + "word " * 40)
    html = refusal.to_html(type(e), e, "Traceback <b>")
    assert "<script>" not in html and "&lt;script&gt;" in html and "Traceback &lt;b&gt;" in html
    ls = refusal.lines(type(e), e)
    assert ls[0] == "refused before anything reached the GPU: RMSNormError" and ls[-1] == refusal.KEEPS
    assert len(ls) == 5 and all(len(x) <= 110 for x in ls[1:-1])


def test_a_refusal_is_a_valueerror_the_course_defines():
    assert refusal.is_refusal(rms_norm.RMSNormError("x")) and refusal.is_refusal(launch.LaunchError("x"))
    assert refusal.is_refusal(AuditError("x"))
    from launchlab.sections.s09_lab import fix
    assert refusal.is_refusal(fix.FixError("x"))
    # the complement: Python's own ValueError, a subclass of it made elsewhere, the course's RuntimeErrors
    assert not refusal.is_refusal(ValueError("x")) and not refusal.is_refusal(KeyError("x"))
    from json import JSONDecodeError
    assert not refusal.is_refusal(JSONDecodeError("x", "", 0))
    from launchlab.core.recordings import RecordingError
    assert not refusal.is_refusal(RecordingError("x"))


def test_the_hook_is_set_only_on_a_running_shell_and_once(monkeypatch):
    import sys
    import types
    assert refusal.register(None) is False and refusal.register(object()) is False
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    assert refusal.in_a_notebook() is False                     # IPython loaded, no shell running (pytest)
    monkeypatch.delitem(sys.modules, "IPython")
    assert refusal.in_a_notebook() is False                     # IPython never imported: nothing imports it

    class Shell:
        calls = []

        def set_custom_exc(self, exc, handler):
            self.calls.append((exc, handler))
    shell = Shell()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert refusal.in_a_notebook() is True and refusal.in_a_notebook() is True
    assert Shell.calls == [((ValueError,), refusal.handler)]    # set once, for ValueError only


def test_visible_lines_count_what_is_rendered():
    outs = [{"output_type": "stream", "text": "a\nb\n"},
            {"output_type": "display_data", "data": {"text/plain": "x\ny\nz", "text/html": "<p>x</p>"}},
            {"output_type": "error", "traceback": ["\x1b[31mE\x1b[0m: one", "two\nthree"]}]
    assert refusals.visible_lines(outs) == 2 + 3 + 3
    assert refusals.visible_lines([]) == 0


# ------------------------------------------------------------------ the committed measure
def test_every_your_turn_notebook_and_the_lab_are_measured():
    from launchlab.faces.hands import your_turn_cells
    assert sum(your_turn_cells().values()) == 8
    assert set(REPORT["kernel_kept"]) == {c["notebook"] for c in REPORT["cases"]}
    assert len(REPORT["kernel_kept"]) == 9 and "09_lab_audit.ipynb" in REPORT["kernel_kept"]
    assert all(REPORT["kernel_kept"].values())


def test_every_refusal_is_boxed_and_at_most_eight_lines():
    refused = [c for c in REPORT["cases"] if c["error"]]
    assert len(refused) >= 50
    assert all(c["boxed"] for c in refused), [c for c in refused if not c["boxed"]]
    assert REPORT["max_lines"] == max(c["lines"] for c in refused) <= refusals.LIMIT
    assert hands.headline()["refusal_lines_max"] == REPORT["max_lines"]
    # an edit the course lets run is no refusal: 01's block of 100 threads runs (its kernel takes any block), and
    # so does 07's -- one block of 100 covers 100 of the 2^20 elements, and the guarded kernel runs it safely so
    # that cmp counts the tail no thread reached (issue 58)
    ran = [c for c in REPORT["cases"] if not c["error"]]
    assert [(c["notebook"], c["edit"]) for c in ran] == [("01_the_arithmetic.ipynb", "grid, block = 1, 100"),
                                                         ("07_bit_identity_as_bytes.ipynb", "grid, block = 1, 100")]


@pytest.mark.slow
def test_the_committed_measure_is_what_a_notebook_shows_now():
    now = refusals.measure(["02a_"])
    assert now["cases"] == [c for c in REPORT["cases"] if c["notebook"].startswith("02a_")]
    assert now["kernel_kept"] == {"02a_the_width_was_wrong.ipynb": True} and now["max_lines"] == 5
