"""What a figure plots, as data: so that a figure is compared, not only looked at.

`data(fig)` reads back what every axes of a matplotlib figure draws -- its title, axis labels, scales and
limits; every line's points; every scatter's offsets; every bar or broken bar (x, y, width, height); every text
and legend entry -- with numbers rounded to 4 significant figures (a change of 0.05 % or more shows; the last
bits of a float, which differ between numpy builds, do not). `fingerprint(fig)` is its sha256.

In a notebook (an IPython kernel), `register()` makes that fingerprint the plain-text form of every figure the
course shows: `<Figure 800x420, 1 Axes: 4 lines (96 points), 0 bars, ...; plotted data 1a2b3c4d5e6f>`. The
committed notebooks keep it beside each PNG, and nbval compares plain text (it skips images), so a plot whose
data moved -- a wrong staircase, a ratio off, a bar dropped -- fails `make test` like a wrong printed number
(issue 27). The explorers' static previews carry the same line.
"""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np

SIG = 4                     # significant figures kept


def _num(v) -> float | str | None:
    v = float(v)
    if math.isnan(v):
        return None
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return float(f"{v:.{SIG}g}")


def _nums(a) -> list:
    arr = np.ma.filled(np.ma.asarray(a, dtype=float), np.nan)
    return [_num(v) for v in arr.ravel()]


def _axes(ax) -> dict:
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Rectangle
    lines = [{"label": ln.get_label() if not ln.get_label().startswith("_") else "",
              "x": _nums(ln.get_xdata(orig=False)), "y": _nums(ln.get_ydata(orig=False))}
             for ln in ax.get_lines() if ln.get_visible()]
    bars = [[_num(p.get_x()), _num(p.get_y()), _num(p.get_width()), _num(p.get_height())]
            for p in ax.patches if isinstance(p, Rectangle) and p.get_visible()]
    points, boxes = [], []
    for c in ax.collections:
        if not c.get_visible():
            continue
        if isinstance(c, PolyCollection):        # broken_barh, fill_between
            boxes.append([_nums(path.vertices) for path in c.get_paths()])
        else:
            offsets = c.get_offsets()
            if len(offsets):
                points.append(_nums(offsets))
    texts = [[t.get_text(), *_nums(getattr(t, "xy", t.get_position()))]      # an annotation: the point it marks
             for t in ax.texts if t.get_visible() and t.get_text().strip()]
    legend = ax.get_legend()
    return {"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "xscale": ax.get_xscale(), "yscale": ax.get_yscale(),
            "xlim": _nums(ax.get_xlim()), "ylim": _nums(ax.get_ylim()),
            "lines": lines, "bars": bars, "points": points, "boxes": boxes, "texts": texts,
            "legend": [t.get_text() for t in legend.get_texts()] if legend else []}


def data(fig) -> dict:
    """Everything the figure plots, axes by axes, numbers to SIG significant figures (JSON-ready)."""
    return {"size_px": [round(fig.get_figwidth() * fig.dpi), round(fig.get_figheight() * fig.dpi)],
            "suptitle": fig._suptitle.get_text() if getattr(fig, "_suptitle", None) else "",
            "axes": [_axes(ax) for ax in fig.axes if ax.get_visible()]}


def fingerprint(fig) -> str:
    """sha256 of data(fig), 12 hex digits: equal for the same plot, different when any plotted value moves."""
    return hashlib.sha256(json.dumps(data(fig), sort_keys=True).encode()).hexdigest()[:12]


def describe(fig) -> str:
    """The figure's plain-text form: its size, what it draws, counted, and its fingerprint."""
    d = data(fig)
    axes = d["axes"]
    count = {k: sum(len(a[k]) for a in axes) for k in ("lines", "bars", "points", "boxes", "texts")}
    n_points = sum(len(ln["x"]) for a in axes for ln in a["lines"])
    w, h = d["size_px"]
    return (f"<Figure {w}x{h}, {len(axes)} Axes: {count['lines']} lines ({n_points} points), {count['bars']} bars, "
            f"{count['points']} scatters, {count['boxes']} bar sets, {count['texts']} texts; "
            f"plotted data {fingerprint(fig)}>")


MARK = "plotted data "      # how a test finds a compared figure in a notebook's outputs


def register(ip=None) -> bool:
    """Make describe() the plain-text form of every matplotlib figure this IPython kernel displays. False
    outside IPython (a script, a test): nothing to do there."""
    if ip is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        ip = get_ipython()
    if ip is None or not hasattr(ip, "display_formatter"):
        return False
    import matplotlib.pyplot as plt
    # Loading the inline backend runs IPython's set-up for it, which drops every formatter registered for Figure
    # (pylabtools.select_figure_formats) -- and pyplot loads it lazily, at the first figure. Load it now, then
    # register; the set-up runs once per backend, so it does not drop ours later.
    plt._get_backend_mod()
    from matplotlib.figure import Figure
    ip.display_formatter.formatters["text/plain"].for_type(Figure, lambda fig, p, cycle: p.text(describe(fig)))
    return True


def in_notebooks(folder=None) -> tuple[int, int]:
    """(figures compared, figures drawn) over the committed notebooks: every PNG output, and those whose plain
    text carries a fingerprint (which nbval then compares)."""
    import re
    from pathlib import Path
    folder = Path(folder) if folder else Path(__file__).resolve().parents[2] / "notebooks"
    drawn = compared = 0
    for path in sorted(folder.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                d = out.get("data", {})
                if "image/png" in d:
                    drawn += 1
                    compared += bool(re.search(MARK + r"[0-9a-f]{12}>", "".join(d.get("text/plain", ""))))
    return compared, drawn
