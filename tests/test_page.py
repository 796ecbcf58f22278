"""What a cell's output puts on the screen as lines (launchlab.faces.page) and what a listing shows of a kernel
(launchlab.core.listing: the excerpt, the fold, the diff). Made-up outputs at each edge of the two limits, every
representation a front end picks, and the committed notebooks inside both limits."""
import json
import re

import pytest

from launchlab.core import listing, sources
from launchlab.faces import page


def _nb(tmp_path, outputs, name="99_x.ipynb"):
    p = tmp_path / name
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "x" * 500},          # prose wraps: no width
             {"cell_type": "code", "metadata": {}, "source": "", "outputs": outputs}]
    p.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return p


def stream(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def data(**mimes):
    return {"output_type": "display_data", "metadata": {}, "data": {k.replace("_", "/", 1): v for k, v in mimes.items()}}


# ------------------------------------------------------------------ which representation, which lines
def test_plain_text_and_streams_show_every_line():
    assert page.blocks(stream("a\nbb\n")) == [["a", "bb"]]
    assert page.blocks(stream("\n\n")) == []
    assert page.blocks(data(text_plain="x\ny")) == [["x", "y"]]


def test_the_richest_representation_is_the_one_measured():
    wide = "w" * 300
    assert page.blocks(data(text_plain=wide, image_png="...")) == []                   # the figure is shown
    assert page.blocks({"output_type": "execute_result", "metadata": {},
                        "data": {page.WIDGET_VIEW: {}, "image/png": "", "text/plain": wide}}) == []
    assert page.blocks(data(text_plain=wide, text_html="<p>" + wide + "</p>")) == []   # a paragraph wraps
    assert page.blocks(data(text_plain=wide, text_markdown="ab")) == []


def test_html_pre_lines_count_a_table_wraps_and_a_closed_details_is_a_click_away():
    h = ("<p>head</p><pre>one\ntwo &amp; three</pre>"
         "<table><tr><th>" + "a " * 200 + "</th></tr></table>"
         "<details><summary>the whole listing: 3 lines</summary><pre>" + "z" * 500 + "</pre></details>"
         "<pre>after</pre>")
    assert page.blocks(data(text_html=h)) == [["one", "two & three"], ["after"]]


def test_markdown_fences_count_tables_and_prose_wrap():
    md = ("text " * 60 + "\n\n```cuda\nint x;\n  y();\n```\n\n| " + "c " * 100 + "|\n|---|\n\nafter\n~~~\nz\n")
    assert page.blocks(data(text_markdown=md)) == [["int x;", "  y();"], ["z"]]


# ------------------------------------------------------------------ the two limits, each side of each bound
@pytest.mark.parametrize("width, over", [(110, False), (111, True)])
def test_the_widest_line_bound(tmp_path, width, over):
    m = page.measure([_nb(tmp_path, [stream("short\n" + "x" * width + "\n")])])
    assert m["widest_output_line"] == width and bool(m["lines_over"]) is over


@pytest.mark.parametrize("n, over", [(40, False), (41, True)])
def test_the_longest_listing_bound(tmp_path, n, over):
    m = page.measure([_nb(tmp_path, [stream("\n".join(["l"] * n)), stream("a\nb")])])
    assert m["longest_listing_lines"] == n and bool(m["listings_over"]) is over
    assert m["longest_at"] == "99_x.ipynb cell 1"


# ------------------------------------------------------------------ the excerpt of a long listing
def _code(n_before=60, n_after=60):
    body = [f"    work{i}();" for i in range(n_before)]
    return "\n".join(["__global__ void k(float* x,", "                  int n) {"] + body
                     + ["    const int i = blockIdx.x * blockDim.x + threadIdx.x;"]
                     + [f"    more{i}();" for i in range(n_after)] + ["}"])


def _count(lines):
    """Lines shown plus the lines each fold marker stands for: every line of the code, once."""
    return sum(int(m.group(1)) if (m := re.search(r"// \.\.\. (\d+) lines?$", ln)) else 1 for ln in lines)


def test_a_listing_that_fits_is_whole_one_line_more_is_folded():
    code = "\n".join(f"line {i}" for i in range(listing.MAX_SHOWN))
    assert listing.excerpt(code) == code.split("\n")
    longer = code + "\n    threadIdx;"
    shown = listing.excerpt(longer)
    assert len(shown) <= listing.MAX_SHOWN and shown != longer.split("\n") and "    threadIdx;" in shown


def test_the_excerpt_keeps_the_signature_and_the_geometry_and_accounts_for_every_line():
    code = _code()
    shown = listing.excerpt(code)
    assert shown[:2] == code.split("\n")[:2]                                  # the whole signature
    assert "    const int i = blockIdx.x * blockDim.x + threadIdx.x;" in shown
    assert "    work59();" in shown and "    more0();" in shown            # one neighbour each side
    assert "    work58();" not in shown
    assert _count(shown) == code.count("\n") + 1 and len(shown) <= listing.MAX_SHOWN


def test_a_focus_shows_what_the_caller_names_and_late_matches_win_when_they_do_not_fit():
    code = _code()
    shown = listing.excerpt(code, focus=r"work1\d\(")
    assert "    work10();" in shown and "    blockIdx" not in " ".join(shown)
    many = "\n".join(["__global__ void k() {"] + [f"  hit{i}; filler" for i in range(100)] + ["}"])
    shown = listing.excerpt(many, focus="hit")
    assert len(shown) == listing.MAX_SHOWN and "  hit99; filler" in shown and "  hit0; filler" not in shown
    assert _count(shown) == 102


def test_the_page_shows_the_excerpt_and_folds_the_whole_listing_one_click_away():
    s = listing.show("kda_decode", "kda_decode<1>", block=256)
    assert s.lines > listing.MAX_SHOWN and len(s.shown) <= listing.MAX_SHOWN
    h = s._repr_html_()
    assert h.count("<details>") == 1 and f"the whole listing: {s.lines} lines" in h
    m = page.blocks(data(text_html=h, text_plain=repr(s)))
    assert max(len(b) for b in m) <= listing.MAX_SHOWN
    assert any("COLS_PER_WARP" in ln for b in m for ln in b)                   # the geometry line is on the page
    assert "print() it" in repr(s) and str(s).endswith(s.code)                 # print gives all of it
    small = listing.show("waves", "fixed_work")
    if small.lines <= listing.MAX_SHOWN:
        assert "<details>" not in small._repr_html_()


def test_a_diff_between_two_pieces_shows_the_changed_reduction_line():
    d = listing.diff("rms_norm", "rms_norm_f32", "rms_norm_wide<true>", 128, 1024, between=("rms_original", "rms_wide"))
    added = [ln for ln in d.lines if ln.startswith("+") and not ln.startswith("+++")]
    removed = [ln for ln in d.lines if ln.startswith("-") and not ln.startswith("---")]
    assert any("if (threadIdx.x < REDUCE_THREADS)" in ln for ln in added)
    assert any("block_sum(sum_squares_narrow<CHAIN>(xr, n), shm)" in ln for ln in removed)
    assert not any("write_stats" in ln for ln in added + removed)               # unchanged lines are context
    assert len(d.shown) <= listing.MAX_SHOWN and d._repr_html_().count("<details>") == 2
    swapped = listing.diff("rms_norm", "rms_norm_wide<true>", "rms_norm_f32", 1024, 128, between=("rms_wide", "rms_original"))
    assert {ln[1:] for ln in swapped.lines if ln.startswith("-") and not ln.startswith("---")} == {ln[1:] for ln in added}


def test_a_diff_refuses_a_piece_the_listing_lacks_before_anything_is_shown():
    with pytest.raises(sources.KernelError, match="defines no 'rms_nope'"):
        listing.diff("rms_norm", "rms_norm_f32", "rms_norm_wide<true>", between=("rms_original", "rms_nope"))


def test_a_long_diff_is_cut_at_the_limit_with_a_line_that_says_so():
    d = listing.diff("kda_decode", "kda_walk<0>", "kda_decode<1>")
    if len(d.lines) > listing.MAX_SHOWN:
        assert len(d.shown) == listing.MAX_SHOWN and "more diff lines" in d.shown[-1]


# ------------------------------------------------------------------ the committed course
def test_every_committed_output_fits_the_page():
    m = page.measure()
    assert m["lines_over"] == [] and m["listings_over"] == [], (m["widest_at"], m["longest_at"])
    assert m["widest_output_line"] <= page.WIDEST and m["longest_listing_lines"] <= page.LONGEST


def test_the_committed_lab_shows_no_failed_check():
    """The lab is committed unanswered: its otter checks are left unrun (nbval runs them, not comparing)."""
    nb = json.loads((page.NOTEBOOK_DIR / "09_lab_audit.ipynb").read_text())
    checks = [c for c in nb["cells"] if c["cell_type"] == "code" and "grader.check(" in "".join(c["source"])]
    assert len(checks) >= 9
    for c in checks:
        assert c["outputs"] == [] and "nbval-ignore-output" in c["metadata"]["tags"]
    text = json.dumps(nb)
    assert "Test case failed" not in text and "\\u274c" not in text and "❌" not in text
