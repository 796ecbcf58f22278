"""The cue sheet an instructor teaches from (issue 42): every slide titled, every question put to the room answered
(by the exercise that checks it, from the recordings, or in the slide's notes with numbers the deck shows), the
moves for every explorer, a minute budget per section. Expected values are counted from the decks apart from the
code under test, or worked out by hand for the small decks built here."""
import json

import pytest

from launchlab.core import exercise
from launchlab.faces import cuesheet, presenter

DECKS = presenter.decks()


def deck(*cells):
    return {"cells": list(cells), "metadata": {}}


def md(src, t=None, **notes):
    c = {"cell_type": "markdown", "metadata": {}, "source": src}
    if t:
        c["metadata"]["slideshow"] = {"slide_type": t}
    if notes:
        c["metadata"][presenter.NOTES_KEY] = notes
    return c


def code(src, tags=(), outputs=()):
    return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": src, "outputs": list(outputs),
            "execution_count": 1}


@pytest.mark.parametrize("path", DECKS, ids=lambda p: p.stem[:3])
def test_every_deck_s_cue_sheet_is_complete(path):
    assert cuesheet.problems(json.loads(path.read_text()), path.stem) == []


def test_every_question_is_answered_and_the_count_is_the_summary_s():
    got = cuesheet.counts()
    assert got["asked"] == got["answered"] >= 20
    said = sum(len(cuesheet.asks(json.loads(p.read_text()))) for p in DECKS)
    assert got["asked"] == said


def test_a_question_checked_by_an_exercise_is_answered_with_the_exercise_s_key():
    p = next(p for p in DECKS if p.stem.startswith("03a"))
    a = next(a for a in cuesheet.asks(json.loads(p.read_text())) if a.keys == ["03.floor_main"])
    e = exercise.EXERCISES["03.floor_main"]
    want = e.expected(*(e.recorded() if e.recorded else ()))
    assert e.shown(want) in a.answer and "Why:" in a.answer
    assert "floor" in a.question and a.question.endswith("?")


def test_the_sheet_lists_every_slide_with_a_title_and_the_deck_s_minutes():
    p = DECKS[0]
    nb = json.loads(p.read_text())
    sl = presenter.slides(nb)
    sheet = cuesheet.sheet(p)
    assert sheet.count("     say: ") == len(sl) and sheet.count("     explorer: ") == 3
    asked = len(cuesheet.asks(nb))
    explorers = sum(s.explorers for s in sl)
    total = len(sl) * 1.0 + explorers * 2.0 + asked * 1.5
    assert sheet.splitlines()[0] == f"{p.stem}: {len(sl)} slides, {total:g} minutes"
    assert all(cuesheet.title(nb, s) for s in sl)


def test_a_section_s_minutes_add_its_slides_explorers_and_questions():
    nb = deck(md("# Title", "slide", say="a", point_at="1"),
              md("## 1 · Part one\n\nWhat is 2 + 2?", "slide", say="b", point_at="2", answers=["4, it is 2 + 2"]),
              md("More of part one", "slide", say="c", point_at="1"),
              md("## 2 · Part two", "slide", say="d", point_at="2"))
    sheet = cuesheet.sheet_of(nb, "t")
    assert "== Title (1 min)" in sheet and "== 1 · Part one (3.5 min)" in sheet and "== 2 · Part two (1 min)" in sheet
    assert sheet.splitlines()[0] == "t: 4 slides, 5.5 minutes"
    assert "     ask the room: What is 2 + 2?" in sheet and "     answer: 4, it is 2 + 2" in sheet
    assert "  3. More of part one  [1 min]" in sheet


def test_what_a_question_is():
    for q in ("Predict first. Which one?", "A prediction: the grid at ctx 20,000", "Name the diagnosis: x or y.",
              "How many?"):
        assert cuesheet.ASKS.search(q), q
    for not_q in ("Its bytes match what its SASS predicts.", "The predicted time is 3 µs.", "## Is it? (a heading)"):
        assert not cuesheet.asks(deck(md(not_q, "slide", say="s", point_at="3"))), not_q


def test_the_problems_are_each_found():
    ok = deck(md("## Q\n\nGrid 12 on 132 SMs: how many SMs work?", "slide", say="s", point_at="132", answers=["12 of the 132 SMs"]))
    assert cuesheet.problems(ok) == []
    unanswered = deck(md("## Q\n\nGrid 12 on 132 SMs: how many SMs work?", "slide", say="s", point_at="132"))
    assert any("has no answer" in p for p in cuesheet.problems(unanswered))
    assert cuesheet.counts_of([unanswered, ok]) == {"asked": 2, "answered": 1}
    invented = deck(md("## Q\n\nGrid 12 on 132 SMs: how many SMs work?", "slide", say="s", point_at="132", answers=["133 SMs"]))
    assert any("['133']" in p for p in cuesheet.problems(invented))
    untitled = deck(md("## Q", "slide", say="s", point_at="1"), code("x", outputs=[]))
    untitled["cells"][1]["metadata"]["slideshow"] = {"slide_type": "slide"}
    untitled["cells"][1]["metadata"][presenter.NOTES_KEY] = {"say": "t", "point_at": "1"}
    assert any("slide 2: no title" in p for p in cuesheet.problems(untitled))
    explorer = deck(md("## E at grid 1", "slide", say="s", point_at="1"), code("X().widget()"))
    assert any("without the moves" in p for p in cuesheet.problems(explorer))
    explorer["cells"][0]["metadata"][presenter.NOTES_KEY]["moves"] = "Grid 1 -> 2"
    assert any("['2']" in p for p in cuesheet.problems(explorer))


def test_a_question_s_answer_comes_from_the_check_cell_that_follows_it_on_its_slide_only():
    nb = deck(md("## Q\n\nWhat is the floor of main's kernel?", "slide", say="s", point_at="1"),
              code('exercises.check("03.floor_main", my_floor)', tags=["check"]))
    assert cuesheet.asks(nb)[0].keys == ["03.floor_main"]
    nb = deck(md("## Q\n\nWhat is the floor of main's kernel?", "slide", say="s", point_at="1"),
              md("## next", "slide", say="t", point_at="1"),
              code('exercises.check("03.floor_main", my_floor)', tags=["check"]))
    assert cuesheet.asks(nb)[0].keys == []
