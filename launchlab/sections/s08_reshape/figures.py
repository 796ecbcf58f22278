"""§8's figure: how far each split count's output moves from S = 256's, measured against the proven error bound,
and how far every one sits from the float64 reference. It takes the section's typed result (live or recorded)
and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from launchlab.core import figure as _style
from launchlab.sections.s08_reshape import reassociation as ra


def moves(rows: "list[ra.BySplits]", elements: int, base: int = ra.BASE_S, chosen: int | None = None):
    """Left: per split count, its outputs by |out_S - out_base| as a share of the proven bound (0 = the same
    bytes). Right: the largest error against the float64 reference over the proven bound, per split count."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6), width_ratios=(2.1, 1))
    colors = plt.get_cmap("YlOrRd")(np.linspace(0.15, 0.95, len(ra.BOUND_BINS)))
    colors[0] = (0.75, 0.75, 0.75, 1.0)                       # identical bytes: grey, not a shade of "different"
    ys = np.arange(len(rows))[::-1]
    for y, r in zip(ys, rows):
        left = 0.0
        for i, n in enumerate(r.bound_use):
            share = 100 * n / elements
            a.barh(y, share, left=left, color=colors[i], edgecolor="white", lw=0.5,
                   label=ra.bound_label(i) if y == ys[0] else None)
            left += share
    labels = [f"S = {r.splits}" + (" (base)" if r.splits == base else "") for r in rows]
    a.set_yticks(ys, labels)
    a.set_xlim(0, 105)
    a.set_xticks(range(0, 101, 20))
    a.set_xlabel(f"% of the {elements:,} outputs")
    a.set_title(f"|output − S = {base}'s output| as a share of the proven bound", fontsize=10)
    a.legend(title="share of the bound", ncols=len(ra.BOUND_BINS), loc="upper center", bbox_to_anchor=(0.5, -0.2),
             fontsize=9, title_fontsize=9, columnspacing=0.8, handlelength=1.2, frameon=False)
    b.barh(ys, [100 * r.err_over_bound for r in rows], color="#7570b3")
    for y, r in zip(ys, rows):
        b.annotate(f"{100 * r.err_over_bound:.2f} %", (100 * r.err_over_bound, y), xytext=(3, 0),
                   textcoords="offset points", va="center", fontsize=9)
    b.set_yticks(ys, [""] * len(ys))
    b.set_xlim(0, 1.0)
    b.set_xlabel("max |error| / proven bound (%)")
    b.set_title("error vs float64: far inside it", fontsize=10)
    for ax in (a, b):
        ax.grid(axis="x", alpha=0.3)
    for y, r in zip(ys, rows):
        if r.splits == chosen:                                 # the explorer's split count: its row marked
            _style.mark_chosen(a, 102.5, y)
            b.axhspan(y - 0.45, y + 0.45, fill=False, ec="k", lw=1.5)
    fig.tight_layout()
    return fig
