"""The lab's figure: the decode step swept over one knob. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt

from launchlab.core.figure import mark_chosen
from launchlab.sections.s09_lab import lab


def lab_sweep(data, knob: str, mark: tuple[float, float] | None = None):
    """The lab: the whole step's ms/token under `main` as one offender's geometry moves (graph-timed, ctx 131,072).
    The swept values sit at even steps on the x axis (128 and 132 splits would touch on a numeric one)."""
    fig, ax = plt.subplots(figsize=(7.6, 3.0))
    pts = [p for p in data.swept(knob) if p.ms_per_token]
    xs = list(range(len(pts)))
    at = {p.value: i for i, p in enumerate(pts)}
    ax.plot(xs, [p.ms_per_token for p in pts], "o-", color="#7570b3")
    for i, p in enumerate(pts):
        ax.annotate(f"{p.blocks} blocks" if knob != "rms_block" else f"{p.block} threads", (i, p.ms_per_token),
                    xytext=(4, 6), textcoords="offset points", fontsize=7, color="0.35")
    base = next((p for p in pts if p.value == lab.MAIN_SETTING[knob]), None)
    if base is not None:
        ax.axhline(base.ms_per_token, color="#d95f02", lw=1, ls="--", label=f"at main's geometry ({base.value})")
        ax.legend(fontsize=8, loc="upper right")
    if mark and mark[0] in at:
        mark_chosen(ax, at[mark[0]], mark[1])
    ax.set_xticks(xs, [str(p.value) for p in pts])
    ax.set_xlim(-0.4, len(pts) - 0.4)
    ax.set_xlabel(lab.KNOBS[knob])
    ax.set_ylabel("ms per token (whole step)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
