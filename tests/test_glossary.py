"""The glossary (launchlab.faces.glossary): a term's first use is found in prose only, linked once, counted
when it is not linked; and the committed course defines every term it uses before (at) its first use."""
import json
import re

import pytest

from launchlab.faces import glossary

WAVE = glossary.Term("wave", "wave", r"\bwaves?\b", "one round of blocks", "01_the_arithmetic.ipynb")


@pytest.mark.parametrize("text, found", [
    ("a wave of blocks", "wave"),
    ("`wave` in code, then waves in prose", "waves"),
    ("[a wave](x.ipynb) is a link; the wave after it", "wave"),        # the second: the first is a link's text
    ("## The wave\n\nno other use", None),                             # a heading is not a use
    ("<span title='wave'>x</span> and math $wave$", None),
    ("```\nwave\n```\n", None),
    ("microwave ovens", None),                                         # a word, not a part of one
])
def test_the_first_use_is_in_prose(text, found):
    hit = glossary.first_use(text, WAVE)
    assert (text[hit[0]:hit[1]] if hit else None) == found


def test_link_makes_the_first_use_a_link_and_linking_a_notebook_twice_adds_nothing(tmp_path):
    assert glossary.link("one wave, then a wave", WAVE) == "one [wave](glossary.ipynb#wave), then a wave"
    p = tmp_path / "n.ipynb"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Title\n"]},
             {"cell_type": "code", "metadata": {}, "source": ["wave = 1"], "outputs": []},
             {"cell_type": "markdown", "metadata": {}, "source": ["Two waves. ", "A wave."]}]
    p.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert [u.linked for u in glossary.uses(p, [WAVE])] == [False]
    assert glossary.link_notebook(p, [WAVE]) == 1
    assert "".join(json.loads(p.read_text())["cells"][2]["source"]) == "Two [waves](glossary.ipynb#wave). A wave."
    assert glossary.link_notebook(p, [WAVE]) == 0
    assert [(u.cell, u.linked) for u in glossary.uses(p, [WAVE])] == [(2, True)]


def test_a_plain_use_before_the_link_counts_as_used_before_defined(tmp_path):
    p = tmp_path / "n.ipynb"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["a wave, then [waves](glossary.ipynb#wave)"]}]
    p.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert [u.linked for u in glossary.used_before_defined([p], [WAVE])] == [False]
    cells[0]["source"] = ["[waves](glossary.ipynb#wave), then a wave"]
    p.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert glossary.used_before_defined([p], [WAVE]) == []


def test_every_entry_is_well_formed_and_its_heading_gives_its_anchor():
    ts = glossary.terms()
    assert len(ts) >= 30 and len({t.anchor for t in ts}) == len(ts) and len({t.term for t in ts}) == len(ts)
    issue_41 = {"frontier", "tier", "eval:none", "ratchet", "significance gate", "ABBA", "green context", "PDL",
                "wave", "wave fill", "resident blocks", "theoretical occupancy", "achieved occupancy", "floor",
                "cold L2", "hot L2", "robust spread", "restore set"}
    assert issue_41 <= {t.term for t in ts}
    for t in ts:
        heading = glossary.entry(t).splitlines()[0]
        assert heading.startswith("### ") and glossary.anchor_of(heading[4:]) == t.anchor
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9:-]*", t.anchor), t.anchor


def test_every_term_is_shown_in_the_notebook_its_entry_names():
    assert [t.term for t in glossary.terms() if not glossary.mentions(glossary.NOTEBOOK_DIR / t.taught_in, t)] == []


def test_the_committed_glossary_is_what_the_terms_make():
    committed = json.loads(glossary.GLOSSARY.read_text())
    made = glossary.glossary_notebook()
    assert [c["source"] for c in committed["cells"]] == [c["source"] for c in made["cells"]]


def test_the_committed_course_links_every_first_use():
    assert glossary.used_before_defined() == []
    assert glossary.headline() == {"glossary_terms": len(glossary.terms()), "terms_used_before_defined": 0}
