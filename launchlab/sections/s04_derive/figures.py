"""§4's figures: the MLA split sweep, the tp sweep, and the explorer's view of one shape. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from launchlab.core.figure import mark_chosen
from launchlab.kernels import mla
from launchlab.sections.s04_derive import derive


def mla_sweep(data: "derive.MLAData", model: "derive.SlotModel", mark: tuple[float, float] | None = None):
    """§4: the MLA decode's cold time against its split count (grid), both bodies, with the wave / slot model
    and the memory floor; the hardcoded (128) and derived (256) grids marked."""
    fig, ax = plt.subplots(figsize=(9, 4))
    for body, c, lab in (("off", "#1b9e77", "load, then compute (64-token tiles)"),
                         ("cp.async", "#7570b3", "cp.async double buffer (32-token tiles)")):
        pts = data.swept(body)
        ax.plot([a.grid for a in pts], [a.us for a in pts], "o-", color=c, ms=4, label=lab)
    pts = data.swept("off")
    xs = np.arange(60, 610)
    ax.plot(xs, [model.predict(int(g), -(-data.ctx // int(g))) for g in xs], color="0.35", lw=1, ls="--",
            label=f"slot model, fitted at 132 and 264 ({model.slots} slots);\nits step at 133 is not in the data")
    floor = mla.floors(data.ctx, copy_tbs=data.copy_tbs).memory_us
    ax.axhline(floor, color="#d95f02", lw=1, ls=":")
    ax.annotate(f"memory floor {floor:.1f} µs (151 MB at {data.copy_tbs:.2f} TB/s)", (600, floor), ha="right",
                xytext=(0, 4), textcoords="offset points", fontsize=9, color="#d95f02")
    for g in (132, 264, 528):
        ax.axvline(g, color="0.8", lw=1)
        ax.annotate(f"{g}", (g, ax.get_ylim()[1] if False else 0), fontsize=9, color="0.4", xytext=(2, 2),
                    textcoords="offset points")
    for g, lab in ((128, "hardcoded: 128"), (256, "derived: 256")):
        a = next(p for p in pts if p.grid == g)       # the label under the curves, above the floor, an arrow up
        ax.annotate(lab, (g, a.us), xytext=(g, floor + 0.35 * (a.us - floor)), textcoords="data", ha="center",
                    va="center", fontsize=9, bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="0.7", lw=0.6),
                    arrowprops=dict(arrowstyle="->", color="0.4", lw=0.8))
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xlabel("split blocks in the grid (16 heads, batch 1: grid = splits)")
    ax.set_ylabel("µs per decode (split + combine), cold")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="upper right")
    ax.set_title(f"MLA decode at ctx {data.ctx:,}: the step is past 264 blocks (two per SM), none at 132",
                 fontsize=10)
    fig.tight_layout()
    return fig


def mla_tp(data: "derive.MLAData"):
    """§4: the pinned floor against the derived one as sharding shrinks the head axis (cold)."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    tps = [1, 2, 4, 8]
    for fl, c in (("hardcoded", "#d95f02"), ("derived", "#1b9e77")):
        arms = [data.tp_arm(t, fl) for t in tps]
        ax.plot(tps, [a.us for a in arms], "o-", color=c, label=f"{fl} slice floor")
        for t, a in zip(tps, arms):
            ax.annotate(f"{a.grid}", (t, a.us), xytext=(8, -14 if fl == "derived" else 6),
                        textcoords="offset points", fontsize=9, color=c)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks([50, 100, 200, 300])
    every = [data.tp_arm(t, fl).us for t in tps for fl in ("hardcoded", "derived")]
    ax.set_ylim(min(every) / 1.35, max(every) * 1.35)        # room for the block counts above and below
    ax.set_xlim(0.8, 11)
    ax.set_xticks(tps, [f"tp={t}\n{derive.HEADS_TP[t]} heads" for t in tps])
    ax.set_ylabel("µs per decode, cold (log)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9, loc="upper right")
    ax.set_title("The pinned floor strands the grid only once sharding leaves one head tile\n(numbers: blocks)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def mla_explore(model: "derive.SlotModel", ctx: int, heads: int, derived, hardcoded, us: float | None,
                measured=None):
    """The explorer's chart: the slot model's time against the split grid at one shape, the derived and the
    hardcoded grids on it (and the measured sweep where the shape was swept)."""
    fig, ax = plt.subplots(figsize=(8, 3.6))
    tiles = derived.head_tiles
    ss = [s for s in range(1, 700) if s <= max(1, ctx // 64) and (s * tiles >= 32 or s == 1)]
    xs = [s * tiles for s in ss]
    ys = [model.predict(s * tiles, -(-ctx // s)) for s in ss]
    ax.plot(xs, ys, color="0.35", lw=1, ls="--", label=f"slot model at ctx {ctx:,}, {heads} heads")
    if measured:
        ax.plot([a.grid for a in measured], [a.us for a in measured], "o", color="#1b9e77", ms=4,
                label="measured on the H200 (cold)")
    hx = hardcoded.grid
    ax.plot([hx], [model.predict(hx, hardcoded.slice_tokens)], "x", color="#d95f02", ms=8,
            label=f"main's 1,024-token floor: {hx} blocks")
    dy = us if us is not None else model.predict(derived.grid, derived.slice_tokens)
    mark_chosen(ax, derived.grid, dy)
    ax.annotate(f"derived, target {derived.blocks_per_sm}/SM: {derived.grid} blocks", (derived.grid, dy),
                xytext=(6, 8), textcoords="offset points", fontsize=9)
    for g in (model.sm_count, model.slots, 2 * model.slots):
        ax.axvline(g, color="0.85", lw=1)
    ax.set_xlabel("split blocks in the grid (splits x head tiles)")
    ax.set_ylabel("µs per decode")
    ax.set_xlim(0, max(xs[-1], derived.grid, hx) * 1.05)
    hy = model.predict(hx, hardcoded.slice_tokens)
    ax.set_ylim(0, 2.2 * max(dy, hy, min(ys)))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="upper right")
    fig.tight_layout()
    return fig
