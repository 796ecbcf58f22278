"""Giving the lecture from the course: every section notebook (01-08) is also a slide deck (issue 28).

The deck is the notebook itself. Its cells carry the standard `slideshow.slide_type` metadata that both
presenters read: `slide` opens a slide, a cell without a type continues it, `skip` is left out:

  live     jupyterlab-slideshow, inside JupyterLab: the deck is the running notebook panel, so an explorer on
           its slide still relaunches the kernel (live) or moves over the H200 recording (replay). RISE was
           tried first and its widget manager fails with ipywidgets 8 (docs/notes/presenter.md).
  static   `make slides`: reveal.js HTML per section (nbconvert's slides exporter over the committed replay
           outputs), reveal.js from npm beside it, so a room with no GPU, kernel or internet still has the
           figures and the speaker view.

Every cell that continues a slide is a `fragment`, shown on the next press (issue 42: a continuing cell without a
type was a press that changed nothing on screen), each slide's first cell is tagged `deck-slide` for the slide
counter the present style draws ("7 / 20"), and a remote's PageDown / PageUp step the deck through the course's
JupyterLab settings (deploy/lab/overrides.json, installed by tools/install.py); `prepare()` sets the metadata.

The reading path is untouched: the same cells and outputs; the deck lives in metadata only. A slide's first cell
holds its speaker notes, `metadata.launchlab.say` (the one sentence to say) and `point_at` (the number to point
at, which must be on that slide), and the present style (`PRESENT_STYLE`, notebook metadata that
jupyterlab-fonts applies only while a deck is shown) hides every code cell's source except those tagged
`deck-code`, which must be a few lines. `problems()` checks all of it; tests/test_presenter.py runs it on every
deck, and tests/browser/run_browser.py walks every deck in Chromium.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from launchlab.core import paths

NOTEBOOKS = paths.ROOT / "notebooks"
DECK_NAMES = ("01_", "02a_", "02b_", "03a_", "03b_", "04_", "05_", "06_", "07_", "08_")   # not the lab: its answers
SLIDES_PER_DECK = (14, 25)
CODE_LINES_SHOWN = 4                  # a cell tagged deck-code shows its source on the slide: at most this many lines
SHOW_CODE = "deck-code"
NO_LISTING = "deck-no-listing"        # on the slide, not this cell's source listing (a markdown or HTML output:
LISTING_MIMES = ("text/markdown", "text/html")    # listing.show's page is HTML since issue 41, markdown before)
SMALL_FIGURES = "deck-small-figures"  # on the slide, this cell's pictures at most 300 px tall (two figures on one slide)
NOTES_KEY = "launchlab"
FONTS_KEY = "@deathbeds/jupyterlab-fonts"
PRESENTING = "body[data-jp-deck-mode='presenting'] &"
# the present style: only while a deck is shown (jupyterlab-fonts scopes it to the presenting body), code cells
# show their outputs, not their source, unless tagged deck-code; pictures keep to the slide
# (jupyterlab-fonts writes a cell's tags as data-jpf-cell-tags=",a,b,"; its CSS-in-JS splits selectors at commas,
# so the tags are matched as substrings)
PRESENT_STYLE = {"styles": {"": {
    f"{PRESENTING} .jp-CodeCell:not([data-jpf-cell-tags*='{SHOW_CODE}']) .jp-Cell-inputWrapper": {"display": "none"},
    **{f"{PRESENTING} .jp-CodeCell[data-jpf-cell-tags*='{NO_LISTING}'] .jp-OutputArea-output[data-mime-type='{m}']":
       {"display": "none"} for m in LISTING_MIMES},
    f"{PRESENTING} .jp-OutputArea-output img": {"max-height": "470px", "width": "auto"},
    f"{PRESENTING} .jp-CodeCell[data-jpf-cell-tags*='{SMALL_FIGURES}'] .jp-OutputArea-output img":
        {"max-height": "300px", "width": "auto"},
}}}
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 720
# Issue 42: one press, one visible change, and a slide number the cue sheet's can be matched to. Every cell that
# continues a slide is a `fragment` (jupyterlab-slideshow lays it out with the slide, invisible, and shows it on the
# next press; a cell with no slide type is a press that only moves the active-cell bar), the active-cell bar is
# hidden while presenting, and each slide's first cell carries the tag SLIDE_TAG, which a CSS counter counts: the
# slide's number and the deck's length ("7 / 20") in the bottom-left margin (clear of the slide's content and of
# the remote, bottom right), with no code in the front end.
SLIDE_TAG = "deck-slide"
CONTINUES = "fragment"


# Issue 42: type for a room. At 1280 x 720 the slide's text is at least BODY_PX, what the course printed (outputs,
# the explorers' text, code tagged deck-code, tables, widgets' labels) at least OUTPUT_PX: the course prints lines of
# up to 110 characters (launchlab.core.width), 110 x 0.6 x 18 px = 1,188 px, past the 1,139 px a cell gets even
# with the prompts' columns gone (jupyterlab-slideshow keeps 65 px each side), so the monospace is tracked. Headings are capped so that a slide keeps its height for its evidence. The same
# rules, scoped to reveal.js, set the static decks' type (launchlab.faces.slides), so one composition fits both.
BODY_PX, OUTPUT_PX = 22, 18
HEADING_PX = {"h1": 36, "h2": 30, "h3": 26, "h4": 24}
TRACKING = "-0.04em"                  # monospace at 0.56 em a character, not 0.6: 110 x 10.1 px fits 1,139 px


def type_rules(scope: str) -> dict:
    """The deck's type, each rule one selector under `scope` (jupyterlab-fonts splits a selector at its commas)."""
    out = f"{OUTPUT_PX}px"
    rules = {
        f"{scope} .jp-RenderedHTMLCommon": {"font-size": f"{BODY_PX}px", "line-height": "1.4"},
        f"{scope} .jp-RenderedHTMLCommon p": {"margin-top": "0", "margin-bottom": "0.6em"},
        **{f"{scope} .jp-RenderedHTMLCommon {h}": {"font-size": f"{px}px", "margin-top": "0.3em",
                                                  "margin-bottom": "0.4em"} for h, px in HEADING_PX.items()},
        f"{scope} .jp-RenderedHTMLCommon code": {"font-size": f"{BODY_PX - 2}px"},
        f"{scope} .jp-RenderedHTMLCommon table": {"font-size": out},
        f"{scope} .jp-OutputArea-output pre": {"font-size": out, "line-height": "1.25", "letter-spacing": TRACKING},
        f"{scope} .jp-OutputArea-output .jp-RenderedHTMLCommon pre": {"font-size": out},
        f"{scope} .launchlab-explorer-text": {"font-size": f"{out} !important", "line-height": "1.25",
                                              "letter-spacing": TRACKING},
        f"{scope} .cm-content": {"font-size": out},
        f"{scope} .jupyter-widgets": {"--jp-widgets-font-size": out},
        f"{scope} .widget-label": {"font-size": out},
        f"{scope} .widget-readout": {"font-size": out},
    }
    return rules


def static_css() -> str:
    """The live deck's type and picture caps as CSS for the static decks (reveal.js; nbconvert writes a cell's tags
    as celltag_<tag> classes)."""
    rules = dict(type_rules(".reveal"))
    for key, v in PRESENT_STYLE["styles"][""].items():
        if key.endswith(" img"):
            sel = key.replace(PRESENTING, ".reveal").replace(".jp-CodeCell[data-jpf-cell-tags*='" + SMALL_FIGURES + "']",
                                                             ".celltag_" + SMALL_FIGURES)
            rules[sel] = {**v, "margin": "4px 0"}          # reveal.js gives a picture 20 px above and below
    # nbconvert's and reveal.js's own rules for pre and tables would win some of these (measured: outputs at 19 px)
    def important(v: str) -> str:
        return v if v.endswith("!important") else f"{v} !important"
    return "\n".join(sel + " { " + " ".join(f"{k}: {important(v)};" for k, v in decl.items()) + " }"
                     for sel, decl in rules.items())


def present_style(n_slides: int) -> dict:
    """The deck's present style: PRESENT_STYLE, the type for a room, the prompts' columns gone, the active-cell bar
    hidden and the slide counter of n_slides."""
    rules = dict(PRESENT_STYLE["styles"][""])
    rules.update(type_rules(PRESENTING))
    rules[f"{PRESENTING} .jp-InputPrompt"] = {"display": "none"}
    rules[f"{PRESENTING} .jp-OutputPrompt"] = {"display": "none"}
    rules[f"{PRESENTING} .jp-Notebook"] = {"counter-reset": SLIDE_TAG}
    rules[f"{PRESENTING} .jp-WindowedPanel-viewport"] = {"padding-left": "0", "padding-right": "0"}
    rules[f"{PRESENTING} .jp-OutputArea-output"] = {"padding-left": "0"}
    rules[f"{PRESENTING} .jp-Cell[data-jpf-cell-tags*='{SLIDE_TAG}']"] = {"counter-increment": SLIDE_TAG}
    rules[f"{PRESENTING} .jp-Cell.jp-deck-mod-onscreen[data-jpf-cell-tags*='{SLIDE_TAG}']::after"] = {
        "content": f"counter({SLIDE_TAG}) ' / {n_slides}'", "position": "fixed", "bottom": "40px", "left": "6px",
        "font-size": f"{OUTPUT_PX}px", "color": "#444", "z-index": "10", "background": "var(--jp-layout-color0)",
        "padding": "0 4px"}                 # drawn over a picture that reaches the corner (04's explorer: "15 /")
    rules[f"{PRESENTING} .jp-Collapser"] = {"visibility": "hidden"}
    return {"styles": {"": rules}}


def prepare(nb: dict) -> dict:
    """The deck's metadata made as problems() asks, in place: each slide's first cell tagged SLIDE_TAG (and no
    other), every cell that continues a slide a fragment, the present style for its number of slides."""
    sl = slides(nb)
    first = {s.cells[0] for s in sl}
    for s in sl:
        for i in s.cells:
            md = nb["cells"][i].setdefault("metadata", {})
            tags_ = [t for t in md.get("tags", []) if t != SLIDE_TAG] + ([SLIDE_TAG] if i in first else [])
            if tags_:
                md["tags"] = tags_
            else:
                md.pop("tags", None)
            if i not in first:
                md["slideshow"] = {"slide_type": CONTINUES}
    nb["metadata"][FONTS_KEY] = present_style(len(sl))
    return nb


@dataclass
class Slide:
    number: int                       # 1-based, in the deck's order
    cells: list[int]                  # the notebook cells shown on it
    say: str = ""
    point_at: str = ""
    explorers: int = 0
    text: str = field(default="", repr=False)    # what the slide shows, as text (markdown, printed outputs)


def decks(root: Path = NOTEBOOKS) -> list[Path]:
    return [p for n in DECK_NAMES for p in sorted(root.glob(f"{n}*.ipynb"))]


def _source(cell: dict) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def slide_type(cell: dict) -> str | None:
    """The cell's slide type; None continues the slide. (The metadata must leave it out for that: nbconvert
    reads "-" as continue, but jupyterlab-slideshow 0.3.4 drops a "-" cell from the deck; problems() refuses it.)"""
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type")


def is_explorer(cell: dict) -> bool:
    return cell["cell_type"] == "code" and ".widget()" in _source(cell)


def tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def unlinked(md: str) -> str:
    """Markdown with each link replaced by its text, as it reads on screen (images left alone)."""
    return re.sub(r"(?<!!)\[([^\]]*)\]\([^)\s]*\)", r"\1", md)


def cell_text(cell: dict) -> str:
    """What a cell shows on a slide, as text: a markdown cell's source, a code cell's printed and plain outputs
    (less what the present style hides on the slide)."""
    if cell["cell_type"] == "markdown":                 # a link shows its text (the glossary's links, issue 41)
        return unlinked(_source(cell))
    out = []
    for o in cell.get("outputs", []):
        d = o.get("data", {})
        if NO_LISTING in tags(cell) and any(m in d for m in LISTING_MIMES):
            continue
        if "text" in o:
            out.append("".join(o["text"]) if isinstance(o["text"], list) else o["text"])
        for mime in ("text/plain", "text/html", "text/markdown"):
            if mime in d:
                out.append("".join(d[mime]) if isinstance(d[mime], list) else d[mime])
    return "\n".join(out)


def slides(nb: dict) -> list[Slide]:
    """The deck's slides in order: a `slide` cell opens one, a `fragment` (or a cell without a type, or `-`)
    continues it, `skip` and `notes` cells are not shown."""
    out: list[Slide] = []
    for i, c in enumerate(nb["cells"]):
        t = slide_type(c)
        if t in ("skip", "notes"):
            continue
        if t in ("slide", "subslide") or not out:
            notes = c.get("metadata", {}).get(NOTES_KEY, {})
            out.append(Slide(len(out) + 1, [], notes.get("say", ""), notes.get("point_at", "")))
        s = out[-1]
        s.cells.append(i)
        s.explorers += is_explorer(c)
        s.text += cell_text(c) + "\n"
    return out


def has_deck(nb: dict) -> bool:
    return any(slide_type(c) is not None for c in nb["cells"])


def problems(nb: dict, name: str = "") -> list[str]:
    """Everything that would make the deck wrong; [] for a good one."""
    out = []
    cells = list(nb["cells"])
    if not has_deck(nb):
        return [f"{name}: no slide metadata"]
    if slide_type(cells[0]) != "slide":
        out.append(f"{name}: the first cell does not open a slide")
    sl = slides(nb)
    if nb["metadata"].get(FONTS_KEY) != present_style(len(sl)):
        out.append(f"{name}: the notebook does not carry the present style of its {len(sl)} slides")
    lo, hi = SLIDES_PER_DECK
    if not lo <= len(sl) <= hi:
        out.append(f"{name}: {len(sl)} slides, not {lo}-{hi}")
    for s in sl:
        where = f"{name} slide {s.number} (cells {s.cells})"
        if not s.say.strip():
            out.append(f"{where}: no sentence to say")
        if not s.point_at.strip():
            out.append(f"{where}: no number to point at")
        elif s.point_at not in s.text:
            out.append(f"{where}: the number to point at, {s.point_at!r}, is not on the slide")
        elif not re.search(r"\d", s.point_at):
            out.append(f"{where}: the number to point at, {s.point_at!r}, holds no digit")
        if s.explorers and (s.explorers > 1 or sum(cells[i]["cell_type"] == "code" for i in s.cells) > 1):
            out.append(f"{where}: an explorer shares its slide with other code")
        first = cells[s.cells[0]]
        if s.explorers and not (first["cell_type"] == "markdown" and _source(first).lstrip().startswith("#")):
            out.append(f"{where}: an explorer's slide opens without a heading (issue 42: a title on every one)")
        if SLIDE_TAG not in tags(cells[s.cells[0]]):
            out.append(f"{where}: its first cell lacks the tag {SLIDE_TAG!r} (the slide counter counts it)")
        for i in s.cells[1:]:
            if slide_type(cells[i]) != CONTINUES:
                out.append(f"{where}: cell {i} continues the slide without being a {CONTINUES!r} (a press that "
                           f"changes nothing on screen)")
            if SLIDE_TAG in tags(cells[i]):
                out.append(f"{where}: cell {i} does not open a slide but is tagged {SLIDE_TAG!r}")
        for i in s.cells:
            c = cells[i]
            if c["cell_type"] == "code" and SHOW_CODE in c["metadata"].get("tags", []):
                n = len(_source(c).strip().splitlines())
                if n > CODE_LINES_SHOWN:
                    out.append(f"{where}: cell {i} shows {n} lines of code (at most {CODE_LINES_SHOWN})")
            if {"exercise", "check"} & set(c["metadata"].get("tags", [])):
                out.append(f"{where}: cell {i} is a learner's exercise or check (skip it: the deck is the lecture)")
    for i, c in enumerate(cells):
        if slide_type(c) not in (None, "slide", CONTINUES, "skip", "notes"):
            out.append(f"{name}: cell {i} has slide type {slide_type(c)!r} (the course uses slide, {CONTINUES}, skip "
                       f"or notes: jupyterlab-slideshow drops a '-' cell from the live deck)")
        if c.get("metadata", {}).get(NOTES_KEY) and slide_type(c) != "slide":
            out.append(f"{name}: cell {i} has speaker notes but does not open a slide")
    explorers = [i for i, c in enumerate(cells) if is_explorer(c)]
    shown = {i for s in sl for i in s.cells}
    out += [f"{name}: explorer cell {i} is not on a slide" for i in explorers if i not in shown]
    return out


def explorer_classes(path: Path) -> list[str]:
    """The explorer classes a deck shows, read from its cells (`X(...).widget()`)."""
    import ast
    names = []
    for c in json.loads(Path(path).read_text())["cells"]:
        if is_explorer(c):
            call = next(n for n in ast.walk(ast.parse(_source(c))) if isinstance(n, ast.Attribute) and n.attr == "widget")
            f = call.value.func
            names.append(f.attr if isinstance(f, ast.Attribute) else f.id)
    return names


def deck(path: Path) -> dict:
    """One deck's counts, for tests and the browser run: slides, explorers, cells shown."""
    nb = json.loads(Path(path).read_text())
    sl = slides(nb)
    pictures = sum(1 for s in sl for i in s.cells for o in nb["cells"][i].get("outputs", [])
                   if "image/png" in o.get("data", {}))
    return {"notebook": Path(path).name, "slides": len(sl), "explorers": sum(s.explorers for s in sl),
            "pictures": pictures, "slide_cells": [s.cells for s in sl]}


# ------------------------------------------------------------------ the static decks (make slides)
def static_notebook(nb: dict) -> dict:
    """The notebook as the static deck shows it: each slide's notes as a reveal.js speaker note (a `notes`
    cell after the slide's last cell); code sources, and the outputs the present style hides, left out as in
    the live deck; widget views left to their static preview picture."""
    nb = copy.deepcopy(nb)
    sl = slides(nb)
    after = {s.cells[-1]: s for s in sl}
    out = []
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] == "code":
            if SHOW_CODE not in tags(c):
                c["metadata"].setdefault("transient", {})["remove_source"] = True
            kept = []
            for o in c.get("outputs", []):
                d = o.get("data", {})
                d.pop("application/vnd.jupyter.widget-view+json", None)
                if NO_LISTING in tags(c) and any(m in d for m in LISTING_MIMES):
                    continue
                kept.append(o)
            c["outputs"] = kept
        out.append(c)
        s = after.get(i)
        if s is not None and s.say:
            out.append({"cell_type": "markdown", "id": f"notes-{s.number}",
                        "metadata": {"slideshow": {"slide_type": "notes"}},
                        "source": f"**Say:** {s.say}\n\n**Point at:** {s.point_at}"})
    nb["cells"] = out
    nb["metadata"].pop("widgets", None)
    return nb
