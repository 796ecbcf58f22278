"""The scaffold every interactive explorer builds on; the explorers themselves live in their sections'
folders (`explorers.py`), declared in their manifests.

Every explorer is built on one scaffold, `Explorer`: a row of controls that wraps on a narrow window, and one
output area that shows a text line and a figure. A subclass gives its controls and a `render(**values)` that
returns (text, figure); its plain `update(...)` computes what the widgets show and is tested in tests/
without a browser. The chosen point is marked the same way on every figure (core.figure.mark_chosen).

Before the cell runs (a notebook opened untrusted, or read on a web page) an explorer shows a static preview:
the figure of its first position with the explorer's text line and a "run the cell to explore" note, as a PNG
beside the widget in the same output (`ExplorerView`). JupyterLab renders a widget only for a trusted output of
a running kernel, and falls back to the PNG otherwise, so nothing disconnected ever looks live.

Which number a slider shows is the section's door's business (`bandwidth.point`, `staircases.point`,
`rmsnorm.point`, `kda.point`): relaunched now in live mode, the recorded H200 point in replay, where the
sliders offer only recorded positions. The explorers never ask which mode they are in.
"""
from __future__ import annotations

import asyncio
import base64
import html
import io
import struct

import ipywidgets
import matplotlib.pyplot as plt

from launchlab.core import machine, plotted
from launchlab.core.width import WIDTH, fit

WRAP = WIDTH          # the explorer's text lines are wrapped at word boundaries, live and in the preview
TEXT_STYLE = ('<pre class="launchlab-explorer-text" style="white-space: pre-wrap; word-break: normal; '
              'overflow-wrap: normal; margin: 0 0 4px 0; font-size: 12px">')


SETTLE_S = 0.05                          # a move waits this long for the next before the panel draws
VIEW_CLASS = "launchlab-explorer-view"   # the explorer's view (its text and picture), for the browser tests


def wrap(text: str, width: int = WRAP) -> str:
    return "\n".join(fit(line, width, hang=2) for line in text.splitlines())


def figure_png(fig, dpi: int = 100) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def _text_png(text: str, width_px: int, **style) -> "np.ndarray":
    """A line (or lines) of text rendered on its own, as an RGBA array `width_px` wide."""
    import matplotlib.image as mpimg
    import numpy as np
    lines = text.count("\n") + 1
    f = plt.figure(figsize=(width_px / 100, 0.22 * lines + 0.12), dpi=100)
    f.text(0.012, 0.5, text, va="center", ha="left", fontsize=10, **style)
    buf = io.BytesIO()
    f.savefig(buf, format="png", dpi=100)
    plt.close(f)
    buf.seek(0)
    return np.asarray(mpimg.imread(buf, format="png"))


def picture_html(png: bytes) -> str:
    """A PNG as an <img> that says its pixel size (read from the PNG's IHDR), so a browser lays its space out
    before it has decoded it; scaled down to the output's width, never up."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    w, h = struct.unpack(">II", png[16:24])
    return (f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" width="{w}" height="{h}" '
            f'style="max-width: 100%; height: auto" alt="the explorer\'s figure">')


def preview_png(text: str, fig) -> bytes:
    """The static preview: the explorer's text above its figure and a note below, as one PNG at 100 dpi. The
    text and the note are drawn apart from the figure and stacked on it, so neither runs into the plot's frame
    or its title."""
    import matplotlib.image as mpimg
    import numpy as np
    plot = np.asarray(mpimg.imread(io.BytesIO(figure_png(fig, 100)), format="png"))
    w = plot.shape[1]
    head = _text_png(wrap(text, max(50, int(w / 8.8))), w, family="monospace")
    note = _text_png(wrap("Static preview of the first position. Run the cell to move the sliders (live on a GPU "
                          "each position relaunches the kernel; in replay it shows the H200 recording).",
                          max(50, int(w / 7.6))), w, style="italic", color="#555555")

    def rgba(a):
        return a if a.shape[2] == 4 else np.concatenate([a, np.ones(a.shape[:2] + (1,), a.dtype)], axis=2)
    stacked = np.concatenate([rgba(head)[:, :w], rgba(plot), rgba(note)[:, :w]], axis=0)
    buf = io.BytesIO()
    mpimg.imsave(buf, stacked, format="png")
    return buf.getvalue()


class ExplorerView(ipywidgets.VBox):
    """The explorer's widget, displayed with a static PNG preview beside it in the same output: a front end
    that can render the live widget does; one that cannot (untrusted, a web page) shows the preview."""

    def __init__(self, children, preview: bytes = b"", preview_text: str = "", **kw):
        super().__init__(children, **kw)
        self._preview, self._preview_text = preview, preview_text

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        if self._preview:
            bundle["image/png"] = base64.b64encode(self._preview).decode()
            bundle["text/plain"] = ("Explorer (static preview of its first position; run the cell to explore):\n"
                                    + self._preview_text)
        return bundle


class Explorer:
    """The shared panel: controls in a wrapping row (or a column) above one output area (text, then figure)."""

    stack = False            # controls in a column, each full width (for several fine sliders)

    def __init__(self):
        self.shown = ""          # the text the explorer shows now

    def controls(self) -> list:
        raise NotImplementedError

    def render(self, **values) -> tuple[str, object]:
        raise NotImplementedError

    def _show(self, out, text: str, fig, close: bool = True) -> None:
        """Text and picture into the explorer's view (an ipywidgets HTML widget) in one assignment (issue 42): the
        front end swaps the old content for the new in one DOM update, and the <img> says its pixel size, so the
        view never shrinks between a move and its picture. An Output widget cleared and refilled did: the text
        arrived 30-70 ms before the picture and the view fell from ~460 px to one line in between, so the slide
        jumped on every move. The figure is rendered here to PNG bytes, never handed to the inline backend."""
        self.shown = text
        png = figure_png(fig) if fig is not None else None
        # HTML, not print(): an output area breaks plain text mid-word when the window is narrow
        # lines fitted to the page's width at word boundaries, as the preview's, so a slide's type never wraps them
        out.value = TEXT_STYLE + html.escape(wrap(text)) + "</pre>" + (picture_html(png) if png is not None else "")
        if fig is not None and close:
            plt.close(fig)

    def values(self) -> dict:
        return {c.description_key: c.value for c in self._controls}

    def swap(self, ctrl, options, value) -> None:
        """Give `ctrl` other options and a value without drawing in between: a control whose options follow
        another's (the grids recorded at another residency or on another slice); the panel then draws once,
        from the observer that called this (it runs before the panel's own redraw)."""
        self._swapping = True
        try:
            ctrl.options = options
            ctrl.value = value
        finally:
            self._swapping = False

    def moved(self) -> None:
        """A control moved. In a kernel (an event loop running) the panel draws SETTLE_S later, once, for the values
        it then has: moves that arrive while it waits or while it draws (a presenter's quick presses, queued in the
        kernel behind a slow render) are folded into the next drawing instead of each drawing in turn (issue 42:
        7 quick presses took 2.5 s to show their last picture). Outside a loop (tests, scripts) it draws now."""
        if getattr(self, "_swapping", False):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.redraw()
            return
        if not getattr(self, "_pending", False):
            self._pending = True
            loop.call_later(SETTLE_S, self._settled)

    def _settled(self) -> None:
        self._pending = False
        self.draws = getattr(self, "draws", 0) + 1
        try:
            self.redraw()
        except Exception as e:              # a callback's error would go to the kernel's log: show it in the view
            self._out.value = TEXT_STYLE + html.escape(f"{type(e).__name__}: {e}") + "</pre>"

    def redraw(self) -> None:
        if getattr(self, "_swapping", False):
            return
        with machine.alone():                 # a slider move redraws the live figure only
            text, fig = self.render(**self.values())
        self._show(self._out, text, fig)

    def widget(self) -> ExplorerView:
        w = ipywidgets
        self._controls = self.controls()
        self._out = w.HTML(layout=w.Layout(width="100%"))
        self._out.add_class(VIEW_CLASS)
        for c in self._controls:
            c.observe(lambda *_: self.moved(), "value")
        with machine.alone():
            text, fig = self.render(**self.values())
        self._show(self._out, text, fig, close=False)   # displayed (as a PNG) before the preview marks it up
        preview = preview_png(text, fig)
        described = "\n" + plotted.describe(fig) if fig is not None else ""
        plt.close(fig)
        rows = self.rows()
        return ExplorerView(rows + [self._out], preview=preview, preview_text=wrap(text) + described)

    def rows(self) -> list:
        w = ipywidgets
        extras = getattr(self, "_extras", {})
        if self.stack:
            return [w.HBox([c] + ([extras[id(c)]] if id(c) in extras else [])) for c in self._controls]
        return [w.HBox(self._controls, layout=w.Layout(flex_flow="row wrap"))]


SLIDER = ipywidgets.Layout(min_width="360px", flex="1 1 auto")   # a track a learner can aim at, wrapping when narrow


def control(widget, key: str):
    widget.description_key = key
    return widget


def exact_box(slider, step: int):
    """A number box beside a fine slider: type an exact value (the slider moves in coarser steps)."""
    box = ipywidgets.BoundedIntText(value=slider.value, min=slider.min, max=slider.max, step=step,
                                    layout=ipywidgets.Layout(width="110px"))

    def to_slider(change):
        if slider.value != change["new"]:
            slider.value = change["new"]

    def to_box(change):
        if box.value != change["new"]:
            box.value = change["new"]
    box.observe(to_slider, "value")
    slider.observe(to_box, "value")
    return box


