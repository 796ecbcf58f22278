"""Figures compared, not only looked at (issue 27).

Every figure a notebook draws carries, as its plain text, the fingerprint of the data it plots
(launchlab.core.plotted); nbval compares plain text with the committed notebook, so a plot whose data moved fails
`make test`. Here: every figure of every committed notebook carries one; the fingerprint moves when any plotted
value, label or bar moves and not for float noise; and where a figure's data has an expectation that does not
come from the code that draws it, that expectation, worked out by hand from the H200's published limits or the
recording's own reps."""
import json
import math
import re
import statistics
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from launchlab.core import plotted

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parent.parent
H200_SMS = 132                  # NVIDIA's H200 (SXM): 132 SMs


def _figure(ys=(1.0, 2.0, 3.0), bars=(4.0, 5.0), label="series", text="note"):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 3], list(ys), label=label)
    ax.bar([1, 2], list(bars))
    ax.annotate(text, (2, 2.0))
    ax.set_title("t")
    return fig


def test_every_figure_a_notebook_draws_carries_its_fingerprint_for_nbval():
    compared, drawn = plotted.in_notebooks(ROOT / "notebooks")
    assert drawn >= 29 and compared == drawn
    sanitize = (ROOT / "tests" / "nbval_sanitize.cfg").read_text()
    assert "plotted data" not in sanitize and "Figure" not in sanitize       # nothing masks the fingerprint


def test_the_count_sees_a_figure_without_a_fingerprint(tmp_path):
    nb = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "data": {"image/png": "x", "text/plain": ["<Figure size 1x1 with 1 Axes>"]}},
        {"output_type": "display_data", "data": {"image/png": "x", "text/plain": ["<Figure 1x1, 1 Axes: ...; "
                                                                                  "plotted data 0123456789ab>"]}},
        {"output_type": "stream", "text": "plotted data 0123456789ab>"}]}]}
    (tmp_path / "a.ipynb").write_text(json.dumps(nb))
    assert plotted.in_notebooks(tmp_path) == (1, 2)


@pytest.mark.parametrize("change", [
    dict(ys=(1.0, 2.002, 3.0)),            # one point moved by 0.1 %
    dict(bars=(4.0, 5.01)),                # one bar
    dict(label="other"),                   # a legend label
    dict(text="other"),                    # an annotation
    dict(ys=(1.0, 2.0, float("nan"))),     # a point dropped (NaN is not drawn)
])
def test_the_fingerprint_moves_when_the_plot_does(change):
    a, b = _figure(), _figure(**change)
    assert plotted.fingerprint(a) != plotted.fingerprint(b)
    plt.close("all")


def test_the_fingerprint_is_the_same_for_the_same_plot_and_for_float_noise():
    a, b = _figure(), _figure(ys=(1.0, 2.0 * (1 + 1e-12), 3.0))
    assert plotted.fingerprint(a) == plotted.fingerprint(b) == plotted.fingerprint(a)
    assert re.fullmatch(r"[0-9a-f]{12}", plotted.fingerprint(a))
    d = plotted.data(a)["axes"][0]
    assert d["lines"][0]["y"] == [1.0, 2.0, 3.0] and [b[3] for b in d["bars"]] == [4.0, 5.0]
    assert d["texts"] == [["note", 2.0, 2.0]] and d["title"] == "t"
    text = plotted.describe(a)
    assert text.startswith("<Figure 400x300, 1 Axes: 1 lines (3 points), 2 bars") and text.endswith(
        f"plotted data {plotted.fingerprint(a)}>")
    plt.close("all")


def test_in_a_kernel_a_figures_plain_text_is_its_fingerprint():
    from IPython.core.interactiveshell import InteractiveShell
    ip = InteractiveShell.instance()
    assert plotted.register(ip)
    fig = _figure()
    assert ip.display_formatter.format(fig)[0]["text/plain"] == plotted.describe(fig)
    assert plotted.register(object()) is False                 # not a shell: nothing to register
    plt.close("all")


# ------------------------------------------------------------------ expectations from outside the drawing code
def test_occupancy_bars_are_the_published_limits_worked_by_hand():
    """§1: 64 registers/thread, no shared memory. By hand from the H200's limits (64 warps, 65,536 registers and
    32 blocks per SM): a warp of 64-register threads holds 2,048 registers, so registers allow 32 warps;
    blocks = min(64 // w, 32 // w, 32); occupancy = blocks x w / 64."""
    from launchlab.sections.s01_arithmetic import figures
    fig = figures.occupancy_vs_block(64, 0)
    bars = sorted((b[0] + b[2] / 2, b[3]) for b in plotted.data(fig)["axes"][0]["bars"])
    assert [x for x, _ in bars] == list(range(32, 1025, 32))
    for x, h in bars:
        w = math.ceil(x / 32)
        assert h == pytest.approx(100 * min(64 // w, 32 // w, 32) * w / 64, rel=1e-3), x
    assert dict(bars)[96] == pytest.approx(46.875, rel=1e-3) and dict(bars)[544] == pytest.approx(26.5625, rel=1e-3)
    plt.close("all")


def test_the_staircases_step_where_the_waves_end_on_132_sms():
    """§1: the recorded medians jump between grid 132 r k and 132 r k + 1 (r resident blocks per SM), and
    nowhere else by as much."""
    from launchlab.sections.s01_arithmetic import figures, staircases
    w = staircases.data()
    d = plotted.data(figures.staircases(w.staircases, w.ramp))["axes"][0]
    series = [ln for ln in d["lines"] if ln["label"]]
    assert len(series) == 3
    for ln in series:
        r = int(ln["label"].split()[0])
        x, y = np.array(ln["x"]), np.array(ln["y"])
        jumps = np.diff(y)
        edges = [i for i in range(len(x) - 1) if any(x[i] <= H200_SMS * r * k < x[i + 1] for k in (1, 2, 3))]
        inside = [xk for xk in range(1, 4) if H200_SMS * r * xk < x.max()]
        assert len(edges) == len(inside) >= 1, ln["label"]
        big = sorted(range(len(jumps)), key=lambda i: -jumps[i])[:len(edges)]
        assert sorted(big) == edges, ln["label"]                          # the biggest rises are the wave edges
        assert min(jumps[edges]) > 10 * max(np.delete(jumps, edges)), ln["label"]
    plt.close("all")


def test_the_mla_block_counts_are_the_split_rule_worked_by_hand():
    """§4 at ctx 131,072: 128 / tp heads in tiles of 16. Pinned 1,024-token slices: 128 splits per tile
    (1,024, 512, 256, 128 blocks). Derived: the target is 2 x 132 = 264 blocks; splits ceil(264 / tiles),
    the slice rounded up to whole 64-token tiles: tiles 8 -> 33 splits of 4,032 (264 blocks); 4 -> 64 of 2,048
    (256); 2 -> 128 of 1,024 (256); 1 -> 256 of 512 (256). The points are the recording's medians."""
    from launchlab.sections.s04_derive import derive, figures
    data = derive.data()
    d = plotted.data(figures.mla_tp(data))["axes"][0]
    texts = {(t[1], t[0]) for t in d["texts"]}
    assert {(float(tp), str(g)) for tp, g in ((1, 1024), (2, 512), (4, 256), (8, 128))} <= texts
    assert {(float(tp), str(g)) for tp, g in ((1, 264), (2, 256), (4, 256), (8, 256))} <= texts
    lines = {ln["label"]: ln for ln in d["lines"]}
    raw = json.loads((ROOT / "data" / "recordings" / "section04.json").read_text())["data"]["mla"]["tp"]
    for name in ("hardcoded", "derived"):          # the median of each arm's reps, read from the file itself
        want = [float(f"{statistics.median(a['timing']['reps_us']):.4g}")
                for tp in (1, 2, 4, 8) for a in raw if a["label"] == f"tp={tp} {name}"]
        assert lines[f"{name} slice floor"]["y"] == want and len(want) == 4
    plt.close("all")
