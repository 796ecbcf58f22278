"""The handout: every static deck of `make slides` printed to PDF by Debian's Chromium (`make handout`).

    python tests/browser/handout.py [SLIDES_DIR] [OUT_DIR]     # defaults: build/slides build/handout

Each deck is opened from disk with the network cut off, in reveal.js's own print layout (`?print-pdf`), every
fragment shown (`pdfSeparateFragments=false`) and its speaker notes on a page after each slide
(`showNotes=separate-page`), and printed at the page size reveal.js sets (1,280 x 720 px and its margin):
build/handout/<deck>.pdf. The pages are counted in the PDF itself (its /Type /Page objects) and must be two per
slide (the slide, its notes): a slide taller than its page would take more (make test-browser counts those slides:
presenter.static_slides_overflowing), and reveal's page break after its last page a blank one more (removed
here). Writes data/browser/handout.json; `summary --json` reports the pages per deck as
presenter.handout_pages.
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_browser as rb  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "data" / "browser" / "handout.json"


def pdf_pages(data: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?!s)", data))


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright
    slides = (Path(argv[0]) if argv else ROOT / "build" / "slides").resolve()
    out = (Path(argv[1]) if len(argv) > 1 else ROOT / "build" / "handout").resolve()
    out.mkdir(parents=True, exist_ok=True)
    decks = sorted(slides.glob("*.slides.html"))
    if not decks:
        print(f"no decks in {slides}: run make slides", file=sys.stderr)
        return 1
    pages, problems = {}, []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=rb.chromium(), args=rb.CHROMIUM_ARGS)
        try:
            for html in decks:
                ctx = browser.new_context(viewport={"width": 1280, "height": 720}, offline=True)
                page = ctx.new_page()
                page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file://", "data:"))
                           else r.abort())
                page.goto(html.as_uri() + "?print-pdf&showNotes=separate-page&pdfSeparateFragments=false")
                page.wait_for_function("window.Reveal && Reveal.isReady() && "
                                       "document.querySelectorAll('.pdf-page').length > 0", timeout=60000)
                # reveal.js breaks the page after every page it lays out, the last slide's notes too: Chromium
                # printed a blank page at the end of every deck (2026-12-05); not after the last
                page.add_style_tag(content=".reveal .slides > :last-child { break-after: auto !important; "
                                           "page-break-after: auto !important; }")
                time.sleep(1.0)
                laid = page.evaluate("document.querySelectorAll('.pdf-page').length")
                slides_n = page.evaluate("Reveal.getTotalSlides()")
                pdf = out / html.name.replace(".slides.html", ".pdf")
                data = page.pdf(path=str(pdf), prefer_css_page_size=True, print_background=True)
                n = pdf_pages(data)
                name = html.name.replace(".slides.html", "")
                pages[name] = n
                if laid != slides_n or n != 2 * slides_n:
                    problems.append(f"{name}: {n} PDF pages for {slides_n} slides ({laid} laid out): want 2 a slide "
                                    "(a slide past its page takes more, a blank page at the end one more)")
                print(f"{name:<40} {'ok  ' if name not in str(problems) else 'FAIL'} {n} pages for {slides_n} slides "
                      f"and their notes -> {pdf}", flush=True)
                ctx.close()
        finally:
            browser.close()
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps({"pages": pages, "problems": problems}, indent=1) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
