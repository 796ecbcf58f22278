"""`make course`'s HTML, opened in Chromium as the browser test does, and screenshotted: every figure present.

    python tests/browser/course_html.py [build/course] [--mode live|replay]

For each page `launchlab.faces.course.build` wrote: open it from disk in Debian's Chromium (Playwright with
executable_path; never `playwright install`), wait for every image to finish loading, count the output images
that decoded (naturalWidth > 0) against the figures the executed notebook holds (build/course/figures.json),
and save a full-page screenshot under build/course/screens/. The counts go into data/course/<mode>.json beside
the course's timing. Exit 1 if any page is missing a figure or an image failed to decode.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_browser import CHROMIUM_ARGS, chromium  # noqa: E402 -- the browser test's own finder and flags

ROOT = Path(__file__).resolve().parents[2]
REPORT_DIR = ROOT / "data" / "course"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    mode = None
    if "--mode" in argv:                     # pages built before course.build wrote mode.txt beside them
        i = argv.index("--mode")
        mode = argv[i + 1]
        del argv[i:i + 2]
    out = (Path(argv[0]) if argv else ROOT / "build" / "course").resolve()
    if mode is None and (out / "mode.txt").exists():
        mode = (out / "mode.txt").read_text().strip()
    want = json.loads((out / "figures.json").read_text())
    screens = out / "screens"
    screens.mkdir(exist_ok=True)
    from playwright.sync_api import sync_playwright
    rows, ok = [], True
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        for html, n in sorted(want.items()):
            errors.clear()
            page.goto((out / html).resolve().as_uri(), wait_until="load")
            page.wait_for_function("Array.from(document.images).every(i => i.complete)", timeout=30_000)
            imgs = page.evaluate("""Array.from(document.querySelectorAll('.jp-OutputArea-output img'))
                                      .map(i => [i.naturalWidth, i.naturalHeight])""")
            decoded = sum(1 for w, h in imgs if w > 0 and h > 0)
            shot = screens / (Path(html).stem + ".png")
            page.screenshot(path=str(shot), full_page=True)
            good = decoded == n == len(imgs) and not errors
            ok &= good
            rows.append({"html": html, "figures": n, "images": len(imgs), "decoded": decoded,
                         "page_errors": len(errors), "screenshot": str(shot.relative_to(ROOT)), "ok": good})
            print(f"{html:<44} figures {n:>2}  images {len(imgs):>2}  decoded {decoded:>2}  "
                  f"{'ok' if good else 'MISSING'}  -> {shot.relative_to(ROOT)}")
        browser.close()
    for f in REPORT_DIR.glob(f"{mode}.json" if mode else "*.json"):   # beside the timing of the run that wrote them
        r = json.loads(f.read_text())
        if {x.get("html") for x in r.get("notebooks", [])} == set(want):
            r["html_in_chromium"] = rows
            f.write_text(json.dumps(r, indent=1) + "\n")
    total = sum(r["figures"] for r in rows)
    print(f"{len(rows)} pages, {total} figures expected, {sum(r['decoded'] for r in rows)} decoded in Chromium: "
          f"{'every figure present' if ok else 'FIGURES MISSING'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
