"""§3's figures: the KDA step against its value tile, the contention run, achieved occupancy per launch. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from launchlab.core import diagnosis
from launchlab.core.figure import mark_chosen
from launchlab.sections.s03_starvation import kda


def kda_contention(alone, contended):
    """The same step alone and beside a streaming read, on one linear axis clipped at the 99th percentile of
    the contended reps (the reps beyond it are counted in the legend, not hidden)."""
    fig, ax = plt.subplots(figsize=(8, 4.2))
    hi = float(np.percentile(contended.reps_us, 99)) * 1.02
    lo = min(alone.min, contended.min) * 0.98
    bins = np.linspace(lo, hi, 80)
    for t, c, name in ((alone, "#1b9e77", "alone"), (contended, "#d95f02", "beside a streaming read")):
        r = np.asarray(t.reps_us)
        beyond = int(np.sum(r > hi))
        ax.hist(np.clip(r, lo, hi), bins=bins, alpha=0.75, color=c,
                label=f"{name}: median {t.median:.2f} µs, robust spread {diagnosis.robust_spread(r):.1%},\n"
                      f"p99 {np.percentile(r, 99):.2f} µs" + (f", {beyond} rep(s) beyond {hi:.1f} µs "
                                                             f"(max {r.max():.2f} µs)" if beyond else ""))
    ax.set_xlabel(f"time of one decode step (µs, CUDA events per launch, {alone.l2} L2; linear)")
    ax.set_ylabel("reps")
    ax.set_title("Alone: tight. Beside other work: shifted and spread")
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


def kda_bv(data: "kda.KDAData", tp: int, body: str = "tuned", mark: tuple[float, float] | None = None):
    """The step's time against the value tile BV at one tp, one body, both elision modes (CUDA graph, hot L2)."""
    fig, ax = plt.subplots(figsize=(7, 2.8))
    bvs = sorted({p.bv for p in data.sweep if p.body == body})
    for m, c, lab in (("store", "#d95f02", "product staged in global memory"),
                      ("rn", "#1b9e77", "product recomputed (__fmul_rn)")):
        pts = [data.point(tp, bv, m, body) for bv in bvs]
        ax.plot(bvs, [p.timing.median for p in pts], "o-", color=c, label=lab)
        if m == "rn":       # both modes launch the same grid: label the blocks once, below the lower line
            for p in pts:
                ax.annotate(f"{p.blocks}", (p.bv, p.timing.median), fontsize=9, xytext=(4, -10),
                            textcoords="offset points", color="0.3")
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xscale("log", base=2)
    ax.set_xticks(bvs, [str(b) for b in bvs])
    ax.set_xlabel(f"BV (value tile); numbers: blocks in the grid at tp={tp}, {kda.HEADS_TP[tp]} heads")
    ax.set_ylabel(f"µs per step ({body}, hot L2)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=9, loc="lower left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def achieved_by_launch(data, cases):
    """A few launches side by side (e.g. §3's main, fix and tuned): SMs with work, the calculator's theoretical
    occupancy, and the achieved occupancy from the block timeline and from ncu, per launch."""
    fig, ax = plt.subplots(figsize=(8, 3.4))
    x = np.arange(len(cases))
    series = (("SMs with work (%)", [100 * c.sms_with_work / 132 for c in cases], "0.6"),
              ("theoretical (calculator)", [c.theoretical_pct for c in cases], "0.25"),
              ("achieved, block timeline", [c.achieved_pct for c in cases], "#1b9e77"),
              ("achieved, ncu", [r.achieved_pct if (r := data.ncu_for(c.name)) else np.nan for c in cases], "#d95f02"))
    w = 0.2
    for k, (lab, vals, col) in enumerate(series):
        bars = ax.bar(x + (k - 1.5) * w, vals, w, color=col, label=lab)
        for b, v in zip(bars, vals):
            if np.isfinite(v):
                ax.annotate(f"{v:.0f}", (b.get_x() + b.get_width() / 2, v), ha="center", fontsize=9,
                            xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x, [f"{c.name}\n{c.grid} x {c.block}" for c in cases])
    ax.set_ylabel("percent")
    ax.set_ylim(0, 130)
    ax.legend(fontsize=9, ncol=4, loc="upper center", framealpha=1)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("What each launch could hold, and what it held", fontsize=10)
    fig.tight_layout()
    return fig
