"""Every page of the course's website (make site, build/site/) opened in Debian's Chromium: served from
127.0.0.1 with every other request refused and counted, each page checked for console errors, every picture
decoded, every internal link followed (the page must exist, its #fragment an element of that page), the search
page answering a query from its own index. Writes data/site/report.json; exit 1 on any problem.

    python tests/browser/site_pages.py [SITE_DIR]
"""
from __future__ import annotations

import functools
import http.server
import json
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from run_browser import CHROMIUM_ARGS, chromium  # noqa: E402

from launchlab.faces import site  # noqa: E402

REPORT = ROOT / "data" / "site" / "report.json"

JS_PAGE = """() => {
  const imgs = [...document.querySelectorAll('main img, article img, .bd-article img')];
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
  return {images: imgs.length, decoded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
          links, ids: [...document.querySelectorAll('[id]')].map(e => e.id),
          title: document.title, text: document.body.innerText.length};
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def serve(folder: Path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def check(folder: Path) -> dict:
    from playwright.sync_api import sync_playwright
    built = json.loads((folder / "site-build.json").read_text())
    pages = [p + ".html" for p in site.pages()]
    httpd, base = serve(folder)
    external, report_pages, ids, links = [], [], {}, []
    t0 = time.perf_counter()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})

            def gate(route):
                if route.request.url.startswith((base, "data:", "blob:")):
                    return route.continue_()
                external.append(route.request.url)
                return route.abort()
            ctx.route("**/*", gate)
            for name in pages:
                page = ctx.new_page()
                errors = []
                page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda x, e=errors: e.append(str(x)))
                resp = page.goto(base + name, wait_until="load")
                page.wait_for_timeout(200)
                st = page.evaluate(JS_PAGE)
                ids[name] = set(st["ids"])
                links += [(name, h) for h in st["links"]]
                report_pages.append({"page": name, "status": resp.status if resp else None,
                                     "images": st["images"], "decoded": st["decoded"],
                                     "console_errors": errors, "text_chars": st["text"]})
                page.close()
            # every internal link: the page is served, the fragment is an element of it
            broken = []
            for src, href in links:
                url, frag = urldefrag(href)
                if not url.startswith(base):
                    if urlparse(url).scheme in ("http", "https"):
                        broken.append({"from": src, "href": href, "why": "points off the site"})
                    continue
                rel = url[len(base):] or "index.html"
                if rel.endswith("/"):
                    rel += "index.html"
                target = folder / rel
                if not target.is_file():
                    broken.append({"from": src, "href": href, "why": "no such file"})
                elif frag and rel in ids and frag not in ids[rel]:
                    broken.append({"from": src, "href": href, "why": f"no element #{frag} on {rel}"})
                elif frag and rel not in ids and rel.endswith(".html") and not rel.startswith("decks/"):
                    page = ctx.new_page()
                    page.goto(url)
                    if not page.evaluate("f => !!document.getElementById(f)", frag):
                        broken.append({"from": src, "href": href, "why": f"no element #{frag} on {rel}"})
                    page.close()
            # the search page answers from its own index
            page = ctx.new_page()
            page.goto(base + "search.html?q=occupancy")
            page.wait_for_selector("#search-results ul li, .search li", timeout=15000)
            hits = page.locator("#search-results ul li, .search li").count()
            page.close()
            browser.close()
    finally:
        httpd.shutdown()
    internal = {(s, h) for s, h in links if h.startswith(base)}
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "pages": built["pages"],
            "expected_pages": len(pages), "pages_opened": len(report_pages),
            "pages_ok": sum(1 for r in report_pages if r["status"] == 200 and not r["console_errors"]
                            and r["decoded"] == r["images"]),
            "figures": sum(r["images"] for r in report_pages), "figures_decoded": sum(r["decoded"] for r in report_pages),
            "console_errors": sum(len(r["console_errors"]) for r in report_pages),
            "external_requests": len(external), "external_urls": sorted(set(external))[:20],
            "internal_links_checked": len(internal), "broken_links": len(broken), "broken": broken[:30],
            "search_hits_for_occupancy": hits, "sphinx_warnings": built["warnings"], "decks": len(built["decks"]),
            "seconds": round(time.perf_counter() - t0, 1), "per_page": report_pages}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0]) if argv else site.OUT
    rep = check(folder)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(rep, indent=1) + "\n")
    for r in rep["per_page"]:
        bad = r["status"] != 200 or r["console_errors"] or r["decoded"] != r["images"]
        print(f"{r['page']:<44} {'FAIL' if bad else 'ok  '} {r['decoded']}/{r['images']} figures"
              + (f"; console: {r['console_errors'][:2]}" if r["console_errors"] else ""))
    for b in rep["broken"]:
        print(f"  broken link on {b['from']}: {b['href']} ({b['why']})")
    for u in rep["external_urls"]:
        print(f"  external request refused: {u}")
    print(f"site: {rep['pages_opened']} of {rep['pages']} pages opened in Chromium, {rep['figures_decoded']} of "
          f"{rep['figures']} figures decoded, {rep['console_errors']} console errors, {rep['external_requests']} "
          f"external requests, {rep['broken_links']} broken of {rep['internal_links_checked']} internal links, "
          f"search: {rep['search_hits_for_occupancy']} hits for 'occupancy' ({rep['seconds']} s)")
    ok = (rep["pages_opened"] == rep["pages"] == rep["expected_pages"] and rep["pages_ok"] == rep["pages"]
          and rep["external_requests"] == 0 and rep["broken_links"] == 0 and rep["search_hits_for_occupancy"] > 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
