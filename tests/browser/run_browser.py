"""The course's notebooks in a real browser: `make test-browser`.

JupyterLab is started on 127.0.0.1 with throwaway config, settings, runtime and workspace folders and a random
token; Debian's Chromium, driven by Playwright (pointed at the system browser, never `playwright install`),
then takes every notebook in notebooks/ the way a learner does:

  1. opens it as a fresh clone would (untrusted) and checks it is not marked modified, and that every
     explorer shows its static preview (a picture), never a `VBox(children=...` text;
  2. clears every output, runs all cells from the Run menu and waits for every prompt to show a number (a
     traceback fails the notebook);
  3. moves every slider and changes every dropdown, and checks that its explorer's text and picture change;
  4. measures every slider's track at a 1024-px-wide window with the file browser open (>= 200 px);
  5. collects the browser console's errors (none allowed) and saves a screenshot under build/browser/;
  6. for the section notebooks 01-08, gives the notebook as a slide deck (jupyterlab-slideshow; issue 28) at
     1280 x 720, stepped with PageDown as a presenter's remote sends it (the course's shortcut,
     deploy/lab/overrides.json; issue 42): every slide visited, its content measured from the DOM (it must fit,
     at scale 1), the cells shown the ones its metadata names, every press changing what is on screen (a dead
     press is counted), the slide counter's number the slide's, PageUp going back, the smallest font of any
     visible text, every explorer moved on its slide (text and picture change), screenshots of the first, the
     tallest and every explorer's slide (build/browser/deck-*.png);
  7. opens every static deck of `make slides` (build/slides/) from disk with the network cut off: every slide,
     its speaker notes, every picture decoded, no request leaving the machine.

It writes data/browser/report.json (kept in the repo; `summary --json` reads it) and exits 1 on any failure.
Notebooks added later are covered without editing this file. Traps met and handled (../shared/notes):
off-screen cells are laid out lazily (read textContent, scroll until in view), saved execution counts look
like a finished run (clear first), the news pop-up (turned off in the settings folder), menu items are
clicked by `data-command`, and the server is stopped on every exit, SIGTERM included.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from launchlab.faces import presenter

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SHOTS = ROOT / "build" / "browser"
REPORT = ROOT / "data" / "browser" / "report.json"
MIN_TRACK_PX = 200
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class BrowserTestError(AssertionError):
    pass


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    raise SystemExit("test-browser needs Chromium: `apt-get install -y chromium` (Debian's package); "
                     "Playwright drives the system browser and never downloads one")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A throwaway JupyterLab server on 127.0.0.1, stopped on exit whatever happens."""

    def __init__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="launchlab-browser-"))
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.proc = None

    def __enter__(self):
        settings = self.tmp / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(self.tmp / "config"), JUPYTER_RUNTIME_DIR=str(self.tmp / "rt"),
                   JUPYTERLAB_SETTINGS_DIR=str(self.tmp / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.tmp / "workspaces"), LAUNCHLAB_MODE="replay")
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
               f"--IdentityProvider.token={self.token}", f"--notebook-dir={NOTEBOOKS}",
               "--ServerApp.open_browser=False"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        self.log = open(self.tmp / "server.log", "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        import urllib.request
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2)
                return self
            except OSError:
                if self.proc.poll() is not None:
                    raise SystemExit(f"JupyterLab exited: {(self.tmp / 'server.log').read_text()[-2000:]}")
                time.sleep(0.5)
        raise SystemExit("JupyterLab did not answer within 60 s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


# ------------------------------------------------------------------ in the page
JS_PROMPTS = """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].map(e => e.textContent.trim())"""
JS_TRACEBACKS = """() => [...document.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
  .map(e => e.textContent).filter(t => t.includes('Traceback') || t.includes('Error'))"""
JS_NOTEBOOK_TEXT = """() => { const n = [...document.querySelectorAll('.jp-NotebookPanel')].find(p => !p.classList.contains('lm-mod-hidden'));
  return n ? n.textContent : ''; }"""
JS_PREVIEWS = """() => { const n = [...document.querySelectorAll('.jp-NotebookPanel')].find(p => !p.classList.contains('lm-mod-hidden'));
  return [...n.querySelectorAll('.jp-CodeCell')].filter(c => (c.querySelector('.jp-InputArea') || {textContent: ''}).textContent.includes('.widget()'))
    .map(c => c.querySelectorAll('.jp-OutputArea-output img').length); }"""
JS_TEXT_WRAP = """() => [...document.querySelectorAll('.launchlab-explorer-text')].map(e => getComputedStyle(e).wordBreak)"""
JS_EXPLORER = """(el) => { const v = el.closest('.widget-vbox'); if (!v) return null;
  const out = v.querySelector('.launchlab-explorer-view') || v.querySelector('.widget-output'); if (!out) return null;
  const hash = (s) => { let h = 5381; for (let i = 0; i < s.length; i++) h = ((h * 33) ^ s.charCodeAt(i)) >>> 0; return h; };
  const imgs = [...out.querySelectorAll('img')];
  return {text: out.textContent, img: imgs.map(i => i.src.length + ':' + hash(i.src)).join('|'),
          complete: imgs.every(i => i.complete)}; }"""


def wait_idle(page, timeout: float = 300) -> None:
    """Until every code cell shows a number (not [*], not empty) or a traceback appears."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        tb = page.evaluate(JS_TRACEBACKS)
        if tb:
            raise BrowserTestError(f"a cell raised: {tb[0][:600]}")
        prompts = page.evaluate(JS_PROMPTS)
        if prompts and all(p.startswith("[") and p[1:-2].strip().isdigit() for p in prompts):
            return
        time.sleep(0.5)
    raise BrowserTestError(f"cells still running after {timeout:.0f} s: {page.evaluate(JS_PROMPTS)}")


def menu(page, label: str, cmd: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=label).first.click()
    page.locator(f'li[data-command="{cmd}"]').first.click()


def in_view(page, loc) -> None:
    for _ in range(6):
        loc.scroll_into_view_if_needed(timeout=5000)
        time.sleep(0.2)
        if loc.is_visible():
            return


def explorer_state(loc):
    return loc.evaluate(JS_EXPLORER)


# the explorer's output height through a redraw: its smallest, sampled on every DOM change and every frame
JS_WATCH = """(el) => { const v = el.closest('.widget-vbox'); const out = v.querySelector('.launchlab-explorer-view') || v.querySelector('.widget-output');
  if (window.__llobs) window.__llobs.disconnect();
  const h = () => out.getBoundingClientRect().height;
  window.__llh0 = h(); window.__llmin = window.__llh0;
  const obs = new MutationObserver(() => { window.__llmin = Math.min(window.__llmin, h()); });
  obs.observe(out, {childList: true, subtree: true, attributes: true, characterData: true});
  window.__llobs = obs;
  const tick = () => { if (window.__llobs !== obs) return; window.__llmin = Math.min(window.__llmin, h()); requestAnimationFrame(tick); };
  requestAnimationFrame(tick); }"""
JS_WATCHED = """() => { const r = [window.__llh0, window.__llmin]; if (window.__llobs) window.__llobs.disconnect();
  window.__llobs = null; return r; }"""


def moved(page, control, action, before, timeout: float = 10) -> dict | None:
    """Act, then wait until the explorer's text and picture have both changed. None if nothing changed at all
    within `timeout` s. The result's `heights` is the output's height before and its smallest during the redraw
    (issue 42: an output that shrinks by more than half in between makes the slide jump)."""
    control.evaluate(JS_WATCH)
    action()
    try:
        return _moved(control, before, timeout)
    finally:
        got = page.evaluate(JS_WATCHED)
        moved.heights = got


QUICK_PRESSES = 7


def quick_moves(page, handle, timeout: float = 15) -> float | None:
    """A presenter's quick presses: QUICK_PRESSES arrow presses on the explorer's slider with no wait between, then
    the seconds from the last press until the view last changed (its text and picture settled for 1 s). Issue 42:
    each move drew in turn, 7 quick ones took over 2.5 s; moves that come while the panel waits or draws are now
    folded into one drawing of the last position (launchlab.core.explorer.Explorer.moved). None: never settled."""
    before = explorer_state(handle)
    handle.focus()
    for _ in range(QUICK_PRESSES):
        page.keyboard.press("ArrowLeft")
    t_last = time.time()
    last, changed_at, t0 = before, None, time.time()
    while time.time() - t0 < timeout:
        now = explorer_state(handle)
        if now != last:
            last, changed_at = now, time.time()
        elif changed_at is not None and now["complete"] and time.time() - changed_at > 1.0:
            return round(changed_at - t_last, 2)
        time.sleep(0.05)
    return None


def _moved(control, before, timeout: float) -> dict | None:
    t0, now = time.time(), None
    while time.time() - t0 < timeout:
        now = explorer_state(control)
        if now and now["complete"] and now["text"] != before["text"] and now["img"] and now["img"] != before["img"]:
            return now
        time.sleep(0.1)
    if now and (now["text"], now["img"]) != (before["text"], before["img"]):
        return now
    return None


JS_DECK = """() => { const nb = [...document.querySelectorAll('.jp-NotebookPanel.jp-Deck')].find(p => !p.classList.contains('lm-mod-hidden'));
  if (!nb || document.body.dataset.jpDeckMode !== 'presenting') return null;
  const cells = [...nb.querySelectorAll('.jp-Cell.jp-deck-mod-onscreen')];
  const rects = cells.map(c => c.getBoundingClientRect()).filter(r => r.height > 0);
  const inner = cells.flatMap(c => [...c.querySelectorAll('.jp-OutputArea-output, .jp-RenderedMarkdown, .jp-RenderedHTMLCommon, .widget-output, .jp-InputArea-editor, pre')]);
  const clipped = inner.filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible');
  const wide = inner.filter(e => e.getBoundingClientRect().right > innerWidth + 1);
  const fwd = document.querySelector('.jp-Deck-Remote .jp-deck-mod-direction-forward');
  return {ids: cells.map(c => c.dataset.jpfCellId), top: Math.min(...rects.map(r => r.top)),
          bottom: Math.max(...rects.map(r => r.bottom)), left: Math.min(...rects.map(r => r.left)),
          right: Math.max(...rects.map(r => r.right)), clipped: clipped.length + wide.length,
          vw: innerWidth, vh: innerHeight, images: cells.map(c => [...c.querySelectorAll('img')].filter(i => i.complete && i.naturalWidth > 0).length).reduce((a, b) => a + b, 0),
          can_forward: !!fwd && !fwd.classList.contains('jp-mod-disabled') && !fwd.className.includes('disabled'),
          counter: (() => { const all = [...nb.querySelectorAll('.jp-Cell')].filter(c => (c.dataset.jpfCellTags || '').includes(',""" + presenter.SLIDE_TAG + """,'));
            const c = cells.find(x => all.includes(x)); if (!c) return null; const a = getComputedStyle(c, '::after');
            return {index: all.indexOf(c) + 1, content: a.content, display: a.display}; })()}; }"""
QUICK_SETTLE_S = 2.0                 # the last of 7 quick presses drawn within this (issue 42: 2.5 s and more)
DECK_SIZE = (presenter.SLIDE_WIDTH, presenter.SLIDE_HEIGHT)          # the size the decks are made for
# what is on screen: the cells laid out for the slide and which of them show (a fragment is laid out hidden)
JS_SIGNATURE = """() => [...document.querySelectorAll('.jp-Cell.jp-deck-mod-onscreen')].map(c =>
  c.dataset.jpfCellId + (c.classList.contains('jp-deck-mod-visible') && getComputedStyle(c).opacity !== '0' ? '+' : '-')).join(',')"""
JS_VISIBLE = """(id) => { const c = document.querySelector(`.jp-Cell[data-jpf-cell-id="${id}"]`);
  return !!c && c.classList.contains('jp-deck-mod-visible') && getComputedStyle(c).opacity !== '0'; }"""
# printed text that wraps on the slide: a pre (an output, the explorer's text) taller than its lines
JS_WRAPPED = """() => { const out = [];
  for (const c of document.querySelectorAll('.jp-Cell.jp-deck-mod-onscreen')) {
    for (const p of c.querySelectorAll('.jp-OutputArea-output pre, .launchlab-explorer-text')) {
      const s = getComputedStyle(p); if (s.display === 'none' || p.getBoundingClientRect().height === 0) continue;
      const lines = p.textContent.replace(/\\n$/, '').split('\\n');
      const lh = parseFloat(s.lineHeight) || parseFloat(s.fontSize) * 1.3;
      const pad = parseFloat(s.paddingTop) + parseFloat(s.paddingBottom);
      if (p.scrollHeight - pad > lines.length * lh + lh / 2)
        out.push(Math.max(...lines.map(x => x.length))); } }
  return out; }"""
# the smallest computed font size of any visible text on the slide (px), from the DOM
JS_MIN_FONT = """() => { let m = null;
  for (const c of document.querySelectorAll('.jp-Cell.jp-deck-mod-onscreen.jp-deck-mod-visible')) {
    if (getComputedStyle(c).opacity === '0') continue;
    for (const el of c.querySelectorAll('*')) {
      if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
      const r = el.getBoundingClientRect(), s = getComputedStyle(el);
      if (r.width === 0 || r.height === 0 || s.visibility === 'hidden' || s.display === 'none') continue;
      const f = parseFloat(s.fontSize); m = m === null ? f : Math.min(m, f); } }
  return m; }"""


def palette(page, label: str) -> None:
    page.keyboard.press("Control+Shift+C")
    box = page.locator(".lm-CommandPalette-input").first
    box.fill(label)
    time.sleep(0.3)
    page.keyboard.press("Enter")


def check_deck(page, nb: Path, res: dict) -> dict:
    """The notebook as a deck in jupyterlab-slideshow, at 1280 x 720: every slide visited, its content measured
    from the DOM (no scaling: the deck shows cells at their size), every explorer moved on its slide."""
    cells = json.loads(nb.read_text())["cells"]
    ids = [c.get("id") for c in cells]
    expected = presenter.deck(nb)
    d = {"slides_expected": expected["slides"], "slides_visited": 0, "slides_overflowing": [], "explorers": expected["explorers"],
         "explorers_moved": 0, "slides_mismatched": [], "tallest_px": 0, "problems": []}
    page.set_viewport_size({"width": DECK_SIZE[0], "height": DECK_SIZE[1]})
    # the deck starts at the active cell: make it the first (a click on its text, not on its collapser or on
    # the heading's collapse toggle, which would fold the section away)
    first = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").first.locator(".jp-RenderedMarkdown p").first
    in_view(page, first)
    first.click()
    page.keyboard.press("Escape")
    palette(page, "Start Deck")
    try:
        page.wait_for_function("document.body.dataset.jpDeckMode === 'presenting'", timeout=15000)
    except Exception:
        d["problems"].append("the deck did not start")
        return d
    time.sleep(1.5)
    seen: list[list[int]] = []
    n = 0
    d.update(presses=0, dead_presses=[], counter_wrong=[], min_font_px=None, pageup_back=False)
    for _step in range(400):
        st = page.evaluate(JS_DECK)
        if st is None or not st["ids"]:
            d["problems"].append(f"slide {n + 1}: nothing on screen")
            break
        shown = [ids.index(i) for i in st["ids"] if i in ids]
        if not seen or shown != seen[-1]:
            if shown in seen:
                d["problems"].append(f"slide {n}: the deck came back to cells {shown}")
                break
            seen.append(shown)
            n = len(seen)
            d["slides_visited"] += 1
            height = round(st["bottom"] - st["top"])
            d["tallest_px"] = max(d["tallest_px"], height)
            if (height > st["vh"] or st["top"] < -1 or st["bottom"] > st["vh"] + 1 or st["left"] < -1
                    or st["right"] > st["vw"] + 1 or st["clipped"]):
                d["slides_overflowing"].append({"slide": n, "cells": shown, "height_px": height,
                                                "right_px": round(st["right"]), "clipped": st["clipped"]})
            want = expected["slide_cells"][n - 1] if n <= len(expected["slide_cells"]) else None
            if shown != want:
                d["slides_mismatched"].append({"slide": n, "shown": shown, "metadata": want})
            # the counter: the slide's first cell is the n-th one tagged for it, and its ::after says "n / total"
            c = st["counter"]
            if not c or c["index"] != n or f"/ {d['slides_expected']}" not in c["content"] or c["display"] == "none":
                d["counter_wrong"].append({"slide": n, "counter": c})
            for width in page.evaluate(JS_WRAPPED):
                d.setdefault("lines_wrapped", []).append({"slide": n, "longest": width})
            explorer_cells = [i for i in shown if presenter.is_explorer(cells[i])]
            shot = n == 1 or explorer_cells or height == d["tallest_px"]
            for i in explorer_cells:
                # the explorer's cell may be a fragment not shown yet: press until it is
                for _ in range(len(shown)):
                    if page.evaluate(JS_VISIBLE, ids[i]):
                        break
                    _press(page, d, "PageDown")
                handle = page.locator(f'.jp-Cell[data-jpf-cell-id="{ids[i]}"] .widget-slider .noUi-handle').first
                before = explorer_state(handle)
                after = None
                for k in ("ArrowRight", "ArrowLeft"):
                    after = moved(page, handle, lambda k=k: (handle.focus(), page.keyboard.press(k)), before) if before else None
                    if after is not None:
                        break
                h0, hmin = moved.heights or (0, 0)
                d.setdefault("explorer_heights", []).append({"slide": n, "before_px": round(h0), "least_px": round(hmin)})
                if h0 and hmin < h0 / 2:
                    d.setdefault("explorer_jumps", []).append({"slide": n, "before_px": round(h0), "least_px": round(hmin)})
                if after and after["text"] != before["text"] and after["img"] != before["img"]:
                    d["explorers_moved"] += 1
                    settle = quick_moves(page, handle)
                    d.setdefault("explorer_quick_settle_s", []).append({"slide": n, "seconds": settle})
                    if settle is None or settle > QUICK_SETTLE_S:
                        d["problems"].append(f"slide {n}: {QUICK_PRESSES} quick presses settled after {settle} s")
                else:
                    d["problems"].append(f"slide {n}: the explorer in cell {i} did not redraw text and picture")
                page.evaluate("document.activeElement && document.activeElement.blur()")   # PageDown is the deck's again
            if shot:
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / f"deck-{nb.stem}-{n:02d}.png"))
        fs = page.evaluate(JS_MIN_FONT)
        if fs is not None:
            d["min_font_px"] = fs if d["min_font_px"] is None else min(d["min_font_px"], fs)
        if not st["can_forward"]:
            break
        _press(page, d, "PageDown")
    # PageUp goes back: from the last slide's last step, one press shows less
    before = page.evaluate(JS_SIGNATURE)
    page.keyboard.press("PageUp")
    time.sleep(0.6)
    d["pageup_back"] = page.evaluate(JS_SIGNATURE) != before
    # Escape: jupyterlab-slideshow ends the deck on one Escape in command mode, so the Escape that leaves a cell's
    # editor and the next one ended it; the course's settings (deploy/lab/overrides.json) make one Escape keep the
    # deck and a quick Escape Escape end it
    page.locator(".jp-NotebookPanel.jp-Deck:not(.lm-mod-hidden) .jp-Notebook").first.focus()
    page.keyboard.press("Escape")
    time.sleep(1.5)
    d["escape_keeps_deck"] = page.evaluate("document.body.dataset.jpDeckMode") == "presenting"
    page.keyboard.press("Escape")
    time.sleep(0.1)
    page.keyboard.press("Escape")
    time.sleep(1.0)
    d["escape_twice_ends_deck"] = page.evaluate("document.body.dataset.jpDeckMode") != "presenting"
    if not d["escape_keeps_deck"]:
        d["problems"].append("one Escape ended the deck")
    if not d["escape_twice_ends_deck"]:
        d["problems"].append("Escape Escape did not end the deck")
    if d["dead_presses"]:
        d["problems"].append(f"{len(d['dead_presses'])} presses changed nothing on screen: {d['dead_presses'][:5]}")
    if d.get("explorer_jumps"):
        d["problems"].append(f"explorers shrank by more than half while redrawing: {d['explorer_jumps']}")
    if d["counter_wrong"]:
        d["problems"].append(f"the slide counter is wrong on {len(d['counter_wrong'])} slides: {d['counter_wrong'][:3]}")
    if not d["pageup_back"]:
        d["problems"].append("PageUp did not go back")
    if d["slides_visited"] != d["slides_expected"]:
        d["problems"].append(f"visited {d['slides_visited']} of {d['slides_expected']} slides")
    if d.get("lines_wrapped"):
        d["problems"].append(f"printed lines wrapped on their slide: {d['lines_wrapped'][:4]}")
    if d["slides_overflowing"]:
        d["problems"].append(f"slides overflowing {DECK_SIZE[0]}x{DECK_SIZE[1]}: {d['slides_overflowing']}")
    if d["slides_mismatched"]:
        d["problems"].append(f"slides showing other cells than their metadata says: {d['slides_mismatched'][:3]}")
    if d["explorers_moved"] != d["explorers"]:
        d["problems"].append(f"{d['explorers_moved']} of {d['explorers']} explorers moved on their slides")
    if page.evaluate("document.body.dataset.jpDeckMode") == "presenting":
        palette(page, "Stop Deck")
    return d


def _press(page, d: dict, key: str) -> None:
    """One press of a presenter's remote (PageDown / PageUp, the course's shortcuts: deploy/lab/overrides.json);
    counted dead when nothing on screen changed (the cells shown and which of them are visible), looked at twice."""
    before = page.evaluate(JS_SIGNATURE)
    page.keyboard.press(key)
    d["presses"] += 1
    for _ in range(2):
        time.sleep(0.5)
        if page.evaluate(JS_SIGNATURE) != before:
            return
    d["dead_presses"].append({"press": d["presses"], "key": key, "screen": before[:80]})


SLIDES = ROOT / "build" / "slides"
JS_STATIC = """async () => {
  for (let t = 0; t < 100 && !(window.Reveal && Reveal.isReady()); t++) await new Promise(r => setTimeout(r, 100));
  if (!(window.Reveal && Reveal.isReady())) return null;
  const slides = Reveal.getSlides();
  const out = {slides: slides.length, notes: 0, images: 0, decoded: 0, visited: 0, overflowing: []};
  for (const s of slides) {
    Reveal.slide(Reveal.getIndices(s).h, Reveal.getIndices(s).v);
    await new Promise(r => setTimeout(r, 20));
    if (Reveal.getCurrentSlide() === s) out.visited += 1;
    if ((Reveal.getSlideNotes(s) || '').trim()) out.notes += 1;
    // reveal.js lays every slide out at 1280 x 720 and scales the whole; what is taller is cut at the edge
    const h = Math.max(s.scrollHeight, ...[...s.children].map(c => c.getBoundingClientRect().bottom - s.getBoundingClientRect().top) .map(x => x / (Reveal.getScale() || 1)));
    if (h > 721) out.overflowing.push({slide: out.visited, height_px: Math.round(h)});
    for (const img of s.querySelectorAll('img')) {
      out.images += 1;
      try { await img.decode(); if (img.naturalWidth > 0) out.decoded += 1; } catch (e) {}
    }
  }
  return out; }"""


def check_static_decks(browser) -> list[dict]:
    """Every static deck (make slides) opened from disk with the network cut off: it loads (reveal.js from the
    copy beside it), every slide is visited, carries its speaker notes, and every picture on it decodes."""
    out = []
    for nb in presenter.decks(NOTEBOOKS):
        html = SLIDES / f"{nb.stem}.slides.html"
        r = {"deck": html.name, "problems": [], "console_errors": [], "requests_blocked": []}
        if not html.exists():
            r["problems"].append(f"{html} is missing: run make slides")
            out.append(r)
            continue
        ctx = browser.new_context(viewport={"width": 1280, "height": 720}, offline=True)
        page = ctx.new_page()
        page.on("console", lambda m, r=r: r["console_errors"].append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e, r=r: r["console_errors"].append(str(e)))

        def gate(route, r=r):
            if route.request.url.startswith(("file://", "data:")):
                return route.continue_()
            r["requests_blocked"].append(route.request.url)
            return route.abort()
        page.route("**/*", gate)
        page.goto(html.as_uri())
        st = page.evaluate(JS_STATIC)
        expected = presenter.deck(nb)
        want = expected["slides"]
        if st is None:
            r["problems"].append("reveal.js did not start (offline)")
        else:
            r.update(st)
            if st["slides"] != want or st["visited"] != want:
                r["problems"].append(f"{st['slides']} slides, {st['visited']} visited; the deck has {want}")
            if st["notes"] != want:
                r["problems"].append(f"speaker notes on {st['notes']} of {want} slides")
            if st["decoded"] != st["images"] or st["images"] != expected["pictures"]:
                r["problems"].append(f"{st['decoded']} of {st['images']} pictures decoded; the deck's slides hold "
                                     f"{expected['pictures']}")
        if r["requests_blocked"]:
            r["problems"].append(f"asked the network for {r['requests_blocked'][:3]}")
        if r["console_errors"]:
            r["problems"].append(f"console errors: {r['console_errors'][:3]}")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.evaluate("Reveal.slide(1)") if st else None
        page.screenshot(path=str(SHOTS / f"static-{nb.stem}.png"))
        ctx.close()
        out.append(r)
    return out


def check_notebook(browser, lab: Lab, nb: Path) -> dict:
    res = {"notebook": nb.name, "widgets_moved": 0, "console_errors": [], "problems": []}
    page = browser.new_page(viewport={"width": 1024, "height": 900})
    page.on("console", lambda m: res["console_errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: res["console_errors"].append(str(e)))
    t0 = time.time()
    ws = f"t{secrets.token_hex(4)}"
    page.goto(f"{lab.url}/lab/workspaces/{ws}/tree/{nb.name}?reset&token={lab.token}")
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook", timeout=90000)
    time.sleep(4)
    # 1. as opened: not modified, explorers show their static preview
    tab = page.locator(".lm-TabBar-tab.jp-mod-current").first
    if "jp-mod-dirty" in (tab.get_attribute("class") or ""):
        res["problems"].append("opens already modified")
    before_text = page.evaluate(JS_NOTEBOOK_TEXT)
    explorers = sum(1 for c in json.loads(nb.read_text())["cells"] if ".widget()" in "".join(c["source"]))
    res["explorers"] = explorers
    if "VBox(children" in before_text or "HBox(children" in before_text:
        res["problems"].append("an explorer shows as VBox(...) text before the first run")
    if explorers and "run the cell to explore" in before_text.lower():
        res["problems"].append("an explorer shows its text fallback instead of its preview picture")
    if "Error displaying widget" in before_text:
        res["problems"].append("an explorer shows 'Error displaying widget' before the first run")
    previews = page.evaluate(JS_PREVIEWS)
    res["previews_before_run"] = previews
    if len(previews) != explorers or not all(previews):
        res["problems"].append(f"explorers without a preview picture before the first run: {previews}")
    # 2. clear, run all, wait
    menu(page, "Edit", "editmenu:clear-all")
    time.sleep(1)
    menu(page, "Run", "runmenu:run-all")
    wait_idle(page)
    time.sleep(2)
    # 3. every slider and dropdown, with its explorer's text and picture
    def exercise(kind: str, i: int, control, actions) -> None:
        """Try each action in turn until the explorer redraws; its text and picture must both change."""
        in_view(page, control)
        before = explorer_state(control)
        if before is None:
            return
        after = None
        for act in actions:
            after = moved(page, control, act, before)
            if after is not None:
                break
        if after is None or after["text"] == before["text"] or after["img"] == before["img"]:
            res["problems"].append(f"{kind} {i}: text changed {bool(after) and after['text'] != before['text']}, "
                                   f"picture changed {bool(after) and after['img'] != before['img']}")
            return
        res["widgets_moved"] += 1

    handles = page.locator(".widget-slider .noUi-handle")
    for i in range(handles.count()):
        h = handles.nth(i)
        # right first; at the top of its range, the other way
        exercise("slider", i, h, [lambda h=h, k=k: (h.focus(), page.keyboard.press(k)) for k in ("ArrowRight", "ArrowLeft")])
    selects = page.locator(".widget-dropdown select")
    for i in range(selects.count()):
        s = selects.nth(i)
        options, current = s.locator("option").all_text_contents(), s.input_value()
        target = next(k for k, o in enumerate(options) if o != current and str(k) != current)
        exercise("dropdown", i, s, [lambda s=s, t=target: s.select_option(index=t)])
    breaks = page.evaluate(JS_TEXT_WRAP)
    if any(b != "normal" for b in breaks):
        res["problems"].append(f"explorer text may wrap mid-word (word-break {set(breaks)})")
    # 4. slider tracks at 1024 px with the file browser open
    tracks = page.locator(".widget-slider .noUi-target")
    widths = []
    for i in range(tracks.count()):
        in_view(page, tracks.nth(i))
        box = tracks.nth(i).bounding_box()
        widths.append(round(box["width"]) if box else 0)
    res["slider_track_px"] = widths
    narrow = [w for w in widths if w < MIN_TRACK_PX]
    if narrow:
        res["problems"].append(f"slider tracks narrower than {MIN_TRACK_PX} px at a 1024-px window: {narrow}")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{nb.stem}.png"))
    # 5. the notebook as a slide deck (sections 01-08; issue 28)
    if nb in presenter.decks(nb.parent):
        res["deck"] = check_deck(page, nb, res)
        res["problems"] += [f"deck: {p}" for p in res["deck"]["problems"]]
    if res["console_errors"]:
        res["problems"].append(f"{len(res['console_errors'])} console error(s): {res['console_errors'][:3]}")
    res["seconds"] = round(time.time() - t0, 1)
    page.close()
    return res


def main(names: list[str]) -> int:
    from playwright.sync_api import sync_playwright
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(143)))
    notebooks = sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))
    if names:
        notebooks = [p for p in notebooks if any(n in p.name for n in names)]
    results, static = [], []
    with Lab() as lab, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        version = browser.version
        try:
            for nb in notebooks:
                try:
                    r = check_notebook(browser, lab, nb)
                except BrowserTestError as e:
                    r = {"notebook": nb.name, "widgets_moved": 0, "console_errors": [], "problems": [str(e)]}
                results.append(r)
                print(f"{nb.name:<40} {'ok  ' if not r['problems'] else 'FAIL'} {r.get('seconds', '-')} s, "
                      f"{r['widgets_moved']} widget(s) moved, tracks {r.get('slider_track_px', [])} px"
                      + "".join(f"\n    - {x}" for x in r["problems"]), flush=True)
            static = check_static_decks(browser)
            for r in static:
                print(f"{r['deck']:<40} {'ok  ' if not r['problems'] else 'FAIL'} static deck, offline: "
                      f"{r.get('visited', 0)} slides visited, {r.get('decoded', 0)} pictures decoded"
                      + "".join(f"\n    - {x}" for x in r["problems"]), flush=True)
        finally:
            browser.close()
    decks = [r for r in results if "deck" in r]
    shown = {"decks": sum(1 for r in decks if r["deck"]["slides_visited"] == r["deck"]["slides_expected"] > 0),
             "slides": sum(r["deck"]["slides_visited"] for r in decks),
             "slides_overflowing": sum(len(r["deck"]["slides_overflowing"]) for r in decks),
             "explorers_in_decks": sum(r["deck"]["explorers"] for r in decks),
             "explorers_moved_in_slides": sum(r["deck"]["explorers_moved"] for r in decks),
             "console_errors": sum(len(r["console_errors"]) for r in decks)
             + sum(len(r["console_errors"]) for r in static),
             "static_decks": sum(1 for r in static if not r["problems"]),
             "static_slides_overflowing": sum(len(r.get("overflowing", [])) for r in static),
             # issue 42: presses of the remote that changed nothing, the counter and PageDown / PageUp, the type
             "dead_presses": sum(len(r["deck"].get("dead_presses", [])) for r in decks),
             "pagedown_advances": bool(decks) and all(r["deck"]["slides_visited"] == r["deck"]["slides_expected"]
                                                      and r["deck"].get("pageup_back") for r in decks),
             "slide_counter": bool(decks) and all(not r["deck"].get("counter_wrong") for r in decks),
             "explorer_jumps": sum(len(r["deck"].get("explorer_jumps", [])) for r in decks),
             # every explorer drew the last of 7 quick presses within QUICK_SETTLE_S (the seconds, which vary from
             # run to run, are the report's explorer_quick_settle_s; this dict holds outcomes only: tools/check_reports)
             "explorer_quick_presses_settle": bool(decks) and all(
                 e["seconds"] is not None and e["seconds"] <= QUICK_SETTLE_S
                 for r in decks for e in r["deck"].get("explorer_quick_settle_s", [])),
             # output lines wider than their slide (wrapped): 110-character lines must fit at the deck's type
             "lines_wrapped": sum(len(r["deck"].get("lines_wrapped", [])) for r in decks),
             # one Escape (leaving a cell's editor, or by habit) keeps the deck; a quick Escape Escape ends it
             "escape_keeps_deck": bool(decks) and all(r["deck"].get("escape_keeps_deck")
                                                      and r["deck"].get("escape_twice_ends_deck") for r in decks),
             "live_min_font_px": min((r["deck"]["min_font_px"] for r in decks if r["deck"].get("min_font_px")),
                                     default=None)}
    report = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "chromium": version,
              "notebooks": len(results), "widgets_moved": sum(r["widgets_moved"] for r in results),
              "console_errors": sum(len(r["console_errors"]) for r in results),
              "failed": [r["notebook"] for r in results if r["problems"]]
              + [r["deck"] for r in static if r["problems"]],
              "presenter": shown, "results": results, "static_decks": static,
              "explorer_quick_settle_s": max((e["seconds"] or 99.0 for r in decks
                                              for e in r["deck"].get("explorer_quick_settle_s", [])), default=None)}
    if not names:                                   # the kept report is always of a whole run
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(json.dumps(report, indent=1) + "\n")
    print(f"{report['notebooks']} notebooks, {report['widgets_moved']} widgets moved, "
          f"{report['console_errors']} console errors, failed: {report['failed'] or 'none'}")
    print("presenter: " + ", ".join(f"{k} {v}" for k, v in shown.items()))
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
