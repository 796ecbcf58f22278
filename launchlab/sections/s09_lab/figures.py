"""The lab's figure: the decode step swept over one knob. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt

from launchlab.core.figure import mark_chosen
from launchlab.sections.s09_lab import lab


def lab_sweep(data, knob: str, mark: tuple[float, float] | None = None):
    """The lab: the whole step's ms/token under `main` as one offender's geometry moves (graph-timed, ctx 131,072).
    The x axis is the knob's value on a log2 scale, so 128 and 256 are one step apart and 256 and 264 almost
    touch, as they should: the drop between two values is drawn over the distance between them. Values that
    nearly coincide get their tick label on a second line and their point label below the line."""
    fig, ax = plt.subplots(figsize=(7.6, 3.3))
    pts = [p for p in data.swept(knob) if p.ms_per_token]
    xs = [p.value for p in pts]
    ax.plot(xs, [p.ms_per_token for p in pts], "o-", color="#7570b3")
    close = [i > 0 and xs[i] / xs[i - 1] < 1.1 for i in range(len(xs))]
    for i, p in enumerate(pts):
        below = close[i]
        ax.annotate(f"{p.blocks} blocks" if knob != "rms_block" else f"{p.block} threads", (xs[i], p.ms_per_token),
                    xytext=(5, -14 if below else 6), textcoords="offset points", fontsize=9, color="0.35")
    base = next((p for p in pts if p.value == lab.MAIN_SETTING[knob]), None)
    if base is not None:
        ax.axhline(base.ms_per_token, color="#d95f02", lw=1, ls="--", label=f"at main's geometry ({base.value})")
    if mark and mark[0] in xs:
        mark_chosen(ax, mark[0], mark[1])
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, ["" if close[i] else str(v) for i, v in enumerate(xs)])
    for i, v in enumerate(xs):
        if close[i]:                  # a value next to its neighbour: its label on a second line under the axis
            ax.annotate(str(v), (v, 0), xycoords=("data", "axes fraction"), xytext=(0, -19),
                        textcoords="offset points", ha="center", va="top", fontsize=9.5)
    ax.minorticks_off()
    ax.set_xlim(xs[0] / 1.25, xs[-1] * 1.6)
    lo, hi = min(p.ms_per_token for p in pts), max(p.ms_per_token for p in pts)
    ax.set_ylim(lo - 0.12 * (hi - lo), hi + 0.35 * (hi - lo))       # head room for the labels and the legend
    if base is not None:
        ax.legend(fontsize=9, loc="upper left")
    ax.set_xlabel(lab.KNOBS[knob] + " (log scale)", labelpad=14 if any(close) else 4)
    ax.set_ylabel("ms per token (whole step)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
