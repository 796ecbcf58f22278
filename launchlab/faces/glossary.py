"""The course's glossary (issue 41): every term a learner meets -- the lecture's (frontier, tier, eval:none, the 2x
ratchet, the significance gate) and the course's own (wave, wave fill, resident blocks, floor, cold and hot L2,
robust spread, restore set, green context, PDL, ...) -- each defined once, in the course's words, with the
notebook that teaches it; and in every notebook the first use of each term linked to its entry.

    python -m launchlab glossary            # the terms, and every first use that is not linked (exit 1 if any)
    python -m launchlab glossary --write    # write notebooks/glossary.ipynb and link every first use

The terms are launchlab/faces/glossary.json: term, anchor, match (a regular expression for the words a notebook
uses), text (the definition), taught_in. An entry's anchor is its heading's id as JupyterLab writes it (the
heading's text, spaces as hyphens, case kept), and the course's website uses the same rule (docs/site/conf.py),
so one link `glossary.ipynb#wave-fill` works in both.

A first use is the first match of a term's pattern in a notebook's markdown, outside code, links, headings,
HTML tags and math. `used_before_defined` counts the notebooks' first uses that do not link to the glossary."""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from launchlab.core import paths

TERMS_FILE = Path(__file__).with_name("glossary.json")
NOTEBOOK_DIR = paths.ROOT / "notebooks"
GLOSSARY = NOTEBOOK_DIR / "glossary.ipynb"
LINK_TARGET = "glossary.ipynb"
# what is not prose: fenced code, inline code, a markdown link or image (text and target), an HTML tag, math
_NOT_PROSE = re.compile(r"```.*?```|~~~.*?~~~|`[^`\n]*`|!?\[[^\]]*\]\([^)]*\)|<[^>\n]+>|\$\$.*?\$\$|\$[^$\n]+\$|"
                        r"^#{1,6} [^\n]*$", re.S | re.M)


@dataclass(frozen=True)
class Term:
    term: str
    anchor: str
    match: str
    text: str
    taught_in: str

    @property
    def pattern(self) -> re.Pattern:
        return re.compile(self.match)


def terms() -> list[Term]:
    return [Term(**t) for t in json.loads(TERMS_FILE.read_text())]


def anchor_of(heading: str) -> str:
    """A heading's id as JupyterLab gives it (its text, spaces as hyphens)."""
    return heading.strip().replace(" ", "-")


def _prose_spans(text: str) -> list[tuple[int, int]]:
    """The stretches of a markdown text that are prose (between code, links, tags, math and headings)."""
    spans, at = [], 0
    for m in _NOT_PROSE.finditer(text):
        spans.append((at, m.start()))
        at = m.end()
    return spans + [(at, len(text))]


def first_use(text: str, term: Term) -> tuple[int, int] | None:
    """Where the term's first use in prose is, or None."""
    pat = term.pattern
    for a, b in _prose_spans(text):
        m = pat.search(text, a, b)
        if m:
            return m.start(), m.end()
    return None


def _linked(text: str, term: Term) -> bool:
    return f"]({LINK_TARGET}#{term.anchor})" in text


@dataclass
class Use:
    notebook: str
    cell: int
    term: str
    words: str
    linked: bool


def uses(path: Path, all_terms: list[Term] | None = None) -> list[Use]:
    """Each term's first use in one notebook's markdown, and whether it links to the glossary. A term whose
    first mention is a link (a cell before any plain use) counts as linked."""
    cells = json.loads(Path(path).read_text())["cells"]
    out = []
    for t in all_terms or terms():
        for i, c in enumerate(cells):
            if c["cell_type"] != "markdown":
                continue
            text = "".join(c["source"])
            if _linked(text, t):
                link = text.index(f"]({LINK_TARGET}#{t.anchor})")
                plain = first_use(text, t)
                out.append(Use(Path(path).name, i, t.term, "", plain is None or plain[0] > link))
                break
            hit = first_use(text, t)
            if hit:
                out.append(Use(Path(path).name, i, t.term, text[hit[0]:hit[1]], False))
                break
    return out


def link(text: str, term: Term) -> str:
    """The text with the term's first use in prose made a link to its entry (unchanged when it has none)."""
    hit = first_use(text, term)
    if hit is None:
        return text
    a, b = hit
    return f"{text[:a]}[{text[a:b]}]({LINK_TARGET}#{term.anchor}){text[b:]}"


def course_notebooks() -> list[Path]:
    return [p for p in sorted(NOTEBOOK_DIR.glob("*.ipynb")) if p != GLOSSARY]


def used_before_defined(paths_=None, all_terms=None) -> list[Use]:
    all_terms = all_terms or terms()
    return [u for p in (paths_ or course_notebooks()) for u in uses(p, all_terms) if not u.linked]


def mentions(path: Path, term: Term) -> bool:
    """Whether a notebook mentions the term anywhere (its prose, code or what its cells print)."""
    pat = term.pattern
    for c in json.loads(Path(path).read_text())["cells"]:
        texts = ["".join(c["source"])]
        for o in c.get("outputs", []):
            texts.append("".join(o.get("text", "")))
            texts += ["".join(v) for k, v in o.get("data", {}).items() if k.startswith("text/")]
        if any(pat.search(t) for t in texts):
            return True
    return False


def entry(t: Term) -> str:
    where = t.taught_in.removesuffix(".ipynb")
    heading = t.anchor.replace("-", " ")
    named = "" if heading == t.term else f"**{t.term}** — "       # the heading says it already
    return f"### {heading}\n\n{named}{t.text} *Shown in [{where}]({t.taught_in}).*"


def glossary_notebook() -> dict:
    """notebooks/glossary.ipynb: a title cell, then one markdown cell per term, in alphabetical order."""
    head = ("# Glossary\n\nEvery term the course uses, defined once in its own words, with the notebook that shows "
            "it. In each notebook the first use of a term links here.")
    cells = [head] + [entry(t) for t in sorted(terms(), key=lambda t: t.term.lower())]
    return {"cells": [{"cell_type": "markdown", "id": f"g{i:03d}", "metadata": {}, "source": src.splitlines(True)}
                      for i, src in enumerate(cells)],
            "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                        "name": "python3"}, "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def link_notebook(path: Path, all_terms: list[Term] | None = None) -> int:
    """Link the first use of every term in one notebook's markdown (in place); how many links were added."""
    nb = json.loads(Path(path).read_text())
    added = 0
    for t in all_terms or terms():
        for c in nb["cells"]:
            if c["cell_type"] != "markdown":
                continue
            text = "".join(c["source"])
            if _linked(text, t):
                break
            new = link(text, t)
            if new != text:
                c["source"] = new.splitlines(True)
                added += 1
                break
    if added:
        Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return added


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ts = terms()
    if "--write" in argv:
        GLOSSARY.write_text(json.dumps(glossary_notebook(), indent=1, ensure_ascii=False) + "\n")
        n = sum(link_notebook(p, ts) for p in course_notebooks() + [paths.ROOT / "lab_solutions" / "09_lab_audit.ipynb"])
        print(f"wrote {GLOSSARY.name} ({len(ts)} terms); {n} first uses linked (then `python -m launchlab assign` "
              "carries the lab master's links into notebooks/09)")
    left = used_before_defined(all_terms=ts)
    print(f"{len(ts)} terms; {len(left)} first uses in the notebooks not linked to the glossary")
    for u in left:
        print(f"  {u.notebook} cell {u.cell}: {u.term!r} ({u.words!r})")
    unshown = [t for t in ts if not mentions(NOTEBOOK_DIR / t.taught_in, t)]
    for t in unshown:
        print(f"  {t.term!r}: {t.taught_in} does not mention it")
    return 1 if left or unshown else 0


def headline() -> dict:
    return {"glossary_terms": len(terms()), "terms_used_before_defined": len(used_before_defined())}
