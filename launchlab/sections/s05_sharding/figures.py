"""§5's figure: what sharding heads does to main's KDA grid and time. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt

from launchlab.core import figure as _style  # noqa: F401 - the course's figure style

from launchlab.kernels import kda_decode
from launchlab.sections.s03_starvation import kda


def kda_tp(data: "kda.KDAData", ceiling_tbs: float | None = None):
    """§5: time and achieved bandwidth per decode step against tp, cold L2: main's kernel, the fix, the tuned."""
    tps = [1, 2, 4, 8]
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.4))
    arms = (("walk", kda_decode.V, "store", "#d95f02", "main: grid = n_head, walk, staged"),
            ("walk", kda_decode.BV_TILED, "rn", "#7570b3", "the fix: value tiles BV = 32, elided"),
            ("tuned", kda_decode.BV_TILED, "rn", "#1b9e77", "tuned kernel, BV = 32"))
    for body, bv, m, c, lab in arms:
        pts = [data.point(tp, bv, m, body) for tp in tps]
        axes[0].plot(tps, [p.cold.median for p in pts], "o-", color=c, label=lab)
        axes[1].plot(tps, [p.tbs_cold for p in pts], "o-", color=c, label=lab)
        for tp, p in zip(tps, pts):
            axes[0].annotate(f"{p.blocks}", (tp, p.cold.median), fontsize=9, xytext=(4, 3),
                             textcoords="offset points", color=c)
    if ceiling_tbs:
        axes[1].axhline(ceiling_tbs, color="0.4", ls="--", lw=1)
        axes[1].annotate(f"copy ceiling {ceiling_tbs:.2f} TB/s", (8, ceiling_tbs), fontsize=9, color="0.3",
                         xytext=(-4, -10), textcoords="offset points", ha="right")
    axes[0].set_ylabel("µs per decode step (CUDA graph, cold L2)")
    axes[1].set_ylabel("achieved bandwidth, cold (TB/s)")
    axes[0].set_ylim(bottom=0)
    axes[1].set_ylim(bottom=0)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(tps, [f"tp={t}\n{kda.HEADS_TP[t]} heads" for t in tps])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=9, loc="center right")
    axes[0].set_title("Sharding cuts the work 8x; main's time does not move\n(numbers: blocks in the grid)",
                      fontsize=10)
    axes[1].set_title("...so the bandwidth it achieves falls with its grid", fontsize=10)
    fig.tight_layout()
    return fig
