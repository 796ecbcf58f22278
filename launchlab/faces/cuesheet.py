"""The cue sheet an instructor teaches a section deck from (issue 42): `python -m launchlab slides --notes [NN]`.

Per slide: its title (the slide's first heading, else `launchlab.title` in its notes), the sentence to say and the
number to point at (launchlab.faces.presenter), every question the slide puts to the room with its answer, the
moves to make on its explorer, and a minute budget; per section (a slide opening with a heading) the minutes add up.

A question to the room is a paragraph of a slide that asks (a "?"), asks for a prediction, or asks to name a
diagnosis. Its answer is the exercise that checks it where one does -- the check cell after the question, answered
as the checker's `show_answer` does, from the H200 recordings -- and otherwise the slide's `launchlab.answers`
(written, in order). `problems()` refuses a slide without a title, a question without an answer, an explorer slide
without moves, and a written answer with a number the deck does not show; `counts()` is the summary's
`presenter.cue_sheet_answers`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from launchlab import sections
from launchlab.core import exercise
from launchlab.faces import presenter

ASKS = re.compile(r"\?|\bpredict\b|\ba prediction\b|\bname the diagnosis", re.I)
MINUTES = {"slide": 1.0, "explorer": 2.0, "ask": 1.5}     # a slide, and on top of it each explorer and question
NUMBER = re.compile(r"\d[\d,.]*\d|\d")


@dataclass
class Ask:
    slide: int
    question: str                     # the paragraph that asks, as plain text
    keys: list[str]                   # the exercises that check it ([] where none does)
    answer: str                       # '' where there is none (problems() refuses it)


def _plain(md: str) -> str:
    return " ".join(presenter.unlinked(md).replace("**", "").replace("`", "").split())


def _notes(nb: dict, s: presenter.Slide) -> dict:
    return nb["cells"][s.cells[0]].get("metadata", {}).get(presenter.NOTES_KEY, {})


def _heading(nb: dict, s: presenter.Slide) -> str:
    for i in s.cells:
        c = nb["cells"][i]
        if c["cell_type"] == "markdown":
            for ln in presenter._source(c).split("\n"):
                if re.match(r"#{1,6} ", ln):
                    return ln
    return ""


def title(nb: dict, s: presenter.Slide, width: int = 72) -> str:
    """The slide's title: its first heading, else the one its notes give, else its first sentence on screen (at
    most `width` characters, cut at a word), else '' (a slide that shows no text)."""
    h = _heading(nb, s)
    if h:
        return _plain(h.lstrip("#"))
    if _notes(nb, s).get("title"):
        return _notes(nb, s)["title"]
    shown = sorted(s.cells, key=lambda i: nb["cells"][i]["cell_type"] != "markdown")     # its words first
    first = next((_plain(presenter.cell_text(nb["cells"][i])) for i in shown
                  if _plain(presenter.cell_text(nb["cells"][i]))), "")
    first = re.split(r"(?<=[.:!?])\s", first, maxsplit=1)[0]
    return first if len(first) <= width else first[:width].rsplit(" ", 1)[0] + " ..."


def _checked_by(cells: list, i: int) -> list[str]:
    """The exercises of the check cell that follows cell i, before the next slide opens."""
    for c in cells[i + 1:i + 8]:
        if "check" in c.get("metadata", {}).get("tags", []):
            return re.findall(r"check\(\s*[\"']([^\"']+)[\"']", presenter._source(c))
        if presenter.slide_type(c) == "slide":
            break
    return []


def _answer_of(key: str) -> str:
    e = exercise.EXERCISES[key]
    text = exercise.answer(key, *(e.recorded() if e.recorded else ())).text
    return " ".join(text.split("] ", 1)[-1].split())


def asks(nb: dict) -> list[Ask]:
    """Every question the deck's slides put to the room, in order, each with its answer."""
    sections.all()                                     # the sections register their exercises
    out = []
    for s in presenter.slides(nb):
        written = list(_notes(nb, s).get("answers", []))
        for i in s.cells:
            c = nb["cells"][i]
            if c["cell_type"] != "markdown":
                continue
            paras = [p for p in re.split(r"\n\s*\n", presenter._source(c))
                     if not p.lstrip().startswith("#") and ASKS.search(p)]
            if not paras:
                continue
            keys = _checked_by(nb["cells"], i)
            answer = " ".join(_answer_of(k) for k in keys) if keys else (written.pop(0) if written else "")
            out.append(Ask(s.number, question(paras[-1]), keys, answer))
    return out


def question(paragraph: str) -> str:
    """The paragraph's asking sentences, each with the sentence before it (where the question's numbers are)."""
    said = re.split(r"(?<=[.!?])\s+(?=[A-Z*`\"(])", _plain(paragraph))
    keep = sorted({j for k, x in enumerate(said) if ASKS.search(x) for j in (k - 1, k) if j >= 0})
    return " ".join(said[j] for j in keep)


def minutes(nb: dict, s: presenter.Slide, n_asks: int) -> float:
    return MINUTES["slide"] + MINUTES["explorer"] * s.explorers + MINUTES["ask"] * n_asks


def sheet(path: Path) -> str:
    """One deck's cue sheet, section by section."""
    return sheet_of(json.loads(Path(path).read_text()), Path(path).stem)


def sheet_of(nb: dict, name: str) -> str:
    sl = presenter.slides(nb)
    by_slide: dict[int, list[Ask]] = {}
    for a in asks(nb):
        by_slide.setdefault(a.slide, []).append(a)
    blocks: list[tuple[str, list[str], float]] = []
    for s in sl:
        if not blocks or re.match(r"#{1,2} ", _heading(nb, s)):
            blocks.append((title(nb, s), [], 0.0))
        head, rows, total = blocks[-1]
        mine = by_slide.get(s.number, [])
        m = minutes(nb, s, len(mine))
        rows.append(f"{s.number:>3}. {title(nb, s)}  [{m:g} min]")
        rows.append(f"     say: {s.say}")
        rows.append(f"     point at: {s.point_at}")
        for a in mine:
            rows.append(f"     ask the room: {a.question}")
            rows.append(f"     answer: {a.answer or '(none written)'}")
        if s.explorers:
            rows.append(f"     explorer: {_notes(nb, s).get('moves', '(no moves written)')}")
        blocks[-1] = (head, rows, total + m)
    total = sum(b[2] for b in blocks)
    out = [f"{name}: {len(sl)} slides, {total:g} minutes"]
    for head, rows, m in blocks:
        out.append(f"\n== {head} ({m:g} min)")
        out += rows
    return "\n".join(out)


def problems(nb: dict, name: str = "") -> list[str]:
    """What makes the cue sheet incomplete: a slide without a title, a question without an answer, an explorer
    slide without moves, a written answer (or move) with a number the deck does not show."""
    out = []
    text = "\n".join(s.text for s in presenter.slides(nb))
    for s in presenter.slides(nb):
        where = f"{name} slide {s.number}"
        if not title(nb, s).strip():
            out.append(f"{where}: no title (no heading on the slide and no launchlab.title in its notes)")
        if s.explorers and not _notes(nb, s).get("moves", "").strip():
            out.append(f"{where}: an explorer slide without the moves to make (launchlab.moves)")
        for said in list(_notes(nb, s).get("answers", [])) + [_notes(nb, s).get("moves", "")]:
            missing = [x for x in NUMBER.findall(said) if x not in text]
            if missing:
                out.append(f"{where}: a written answer or move names {missing}, which the deck does not show")
    for a in asks(nb):
        if not a.answer.strip():
            out.append(f"{name} slide {a.slide}: the question {a.question[:60]!r} has no answer")
    return out


def counts_of(nbs) -> dict:
    every = [a for nb in nbs for a in asks(nb)]
    return {"asked": len(every), "answered": sum(bool(a.answer.strip()) for a in every)}


def counts(paths=None) -> dict:
    """The summary's presenter.cue_sheet_answers: the questions put to the room over every deck, and how many the
    cue sheet answers."""
    return counts_of(json.loads(Path(p).read_text()) for p in (paths or presenter.decks()))
