"""What a cell's output puts on the reader's screen, as lines: the widest line and the longest listing any
committed notebook shows without a click (issue 41: at most 110 characters, at most 40 lines).

    python -m launchlab page          # every output line over 110 characters and every listing over 40 lines

A front end shows one representation of each output, the richest it can render (JupyterLab's order: a widget,
HTML, markdown, an image, plain text). What that shows as lines that do not wrap:
- plain text (a stream, or a result with nothing richer): every line;
- HTML: the lines of each <pre>, except what sits inside a closed <details> (one click away);
- markdown: the lines of each fenced code block;
- an image or a widget: no text lines (a widget's static image is its preview).
Prose paragraphs and the cells of an HTML or markdown table wrap to the page, so they have no width of their own;
a table printed as text (a stream) does not wrap, and is measured as text.

A listing is one block of such lines: a stream output, a plain-text result, one <pre> or one code fence.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from launchlab.core import paths
from launchlab.faces import glossary

NOTEBOOK_DIR = paths.ROOT / "notebooks"
WIDEST = 110
LONGEST = 40
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RICHER = (WIDGET_VIEW, "text/html", "text/markdown", "image/png", "image/svg+xml", "image/jpeg")


class _Html(HTMLParser):
    """The <pre> blocks of an HTML output, outside any closed <details>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[list[str]] = []
        self.details = self.summary = 0
        self.pre: list[str] | None = None

    def _hidden(self) -> bool:
        return self.details > 0 and self.summary == 0

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            self.details += 1
        elif tag == "summary":
            self.summary += 1
        elif tag == "pre" and not self._hidden():
            self.pre = []
        elif tag == "br" and self.pre is not None:
            self.pre.append("\n")

    def handle_endtag(self, tag):
        if tag == "details":
            self.details = max(0, self.details - 1)
        elif tag == "summary":
            self.summary = max(0, self.summary - 1)
        elif tag == "pre" and self.pre is not None:
            self.blocks.append("".join(self.pre).rstrip("\n").split("\n"))
            self.pre = None

    def handle_data(self, data):
        if self.pre is not None:
            self.pre.append(data)


FENCE = re.compile(r"^(```|~~~)")


def _markdown(text: str) -> list[list[str]]:
    blocks, fence = [], None
    for ln in text.split("\n"):
        if FENCE.match(ln.strip()):
            if fence is None:
                fence = []
            else:
                blocks.append(fence)
                fence = None
        elif fence is not None:
            fence.append(ln)
    if fence is not None:                     # an unclosed fence runs to the end of the cell
        while fence and not fence[-1].strip():
            fence.pop()
        blocks.append(fence)
    return [b for b in blocks if b]


def blocks(output: dict) -> list[list[str]]:
    """The blocks of unwrapped lines one output shows (see the module's docstring)."""
    if "text" in output:                                        # a stream
        text = "".join(output["text"])
        return [text.rstrip("\n").split("\n")] if text.strip() else []
    data = output.get("data", {})
    if WIDGET_VIEW in data or any(k.startswith("image/") for k in data):
        return []
    if "text/html" in data:
        p = _Html()
        p.feed("".join(data["text/html"]))
        return p.blocks
    if "text/markdown" in data:
        return _markdown("".join(data["text/markdown"]))
    if "text/plain" in data:
        text = "".join(data["text/plain"])
        return [text.rstrip("\n").split("\n")] if text.strip() else []
    if output.get("output_type") == "error":
        return [output.get("traceback", [])]
    return []


@dataclass
class Finding:
    notebook: str
    cell: int
    size: int            # characters (a line) or lines (a listing)
    text: str            # the line, or the listing's first line


def scan(path: Path) -> tuple[list[Finding], list[Finding]]:
    """(every visible line, widest first; every listing, longest first) of one notebook's code cells."""
    nb = json.loads(Path(path).read_text())
    lines, listings = [], []
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code":
            continue
        for o in c.get("outputs", []):
            for b in blocks(o):
                lines += [Finding(Path(path).name, i, len(ln), ln) for ln in b]
                listings.append(Finding(Path(path).name, i, len(b), b[0] if b else ""))
    return sorted(lines, key=lambda f: -f.size), sorted(listings, key=lambda f: -f.size)


def notebooks() -> list[Path]:
    return sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def measure(paths_=None) -> dict:
    """{"widest_output_line": N, "longest_listing_lines": N} over the notebooks, and where each is."""
    lines, listings = [], []
    for p in paths_ if paths_ is not None else notebooks():
        a, b = scan(p)
        lines += a
        listings += b
    w = max(lines, key=lambda f: f.size, default=Finding("", -1, 0, ""))
    n = max(listings, key=lambda f: f.size, default=Finding("", -1, 0, ""))
    return {"widest_output_line": w.size, "widest_at": f"{w.notebook} cell {w.cell}",
            "longest_listing_lines": n.size, "longest_at": f"{n.notebook} cell {n.cell}",
            "lines_over": [f for f in lines if f.size > WIDEST],
            "listings_over": [f for f in listings if f.size > LONGEST]}


SITE_REPORT = paths.ROOT / "data" / "site" / "report.json"     # tests/browser/site_pages.py (make test-browser)


def headline(m: dict | None = None) -> dict:
    """The summary's "reading" figures (issue 41): the glossary's, the page's measured here, and the website's
    read from the last Chromium run over it (data/site/report.json)."""
    m = m or measure()
    out = {**glossary.headline(), "widest_output_line": m["widest_output_line"],
           "longest_listing_lines": m["longest_listing_lines"]}
    if SITE_REPORT.exists():
        r = json.loads(SITE_REPORT.read_text())
        out.update({"site_pages": r["pages"], "site_pages_opened_in_chromium": r["pages_opened"],
                    "site_external_requests": r["external_requests"], "site_broken_links": r["broken_links"]})
    return out


def main(argv=None) -> int:
    m = measure()
    print(f"widest output line {m['widest_output_line']} characters ({m['widest_at']}; limit {WIDEST}); "
          f"longest listing {m['longest_listing_lines']} lines ({m['longest_at']}; limit {LONGEST})")
    for f in m["lines_over"]:
        print(f"  {f.notebook} cell {f.cell}: {f.size} characters: {f.text[:90]}")
    for f in m["listings_over"]:
        print(f"  {f.notebook} cell {f.cell}: a listing of {f.size} lines, from {f.text[:70]!r}")
    return 1 if m["lines_over"] or m["listings_over"] else 0


if __name__ == "__main__":
    sys.exit(main())
