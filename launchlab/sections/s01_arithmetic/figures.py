"""§1's figures: bandwidth against grid and bytes in flight, the wave staircases, occupancy against block size, achieved occupancy against grid. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from launchlab.core import hardware, occupancy
from launchlab.core.figure import COLORS, mark_chosen
from launchlab.sections.s01_arithmetic import bandwidth


def bandwidth_vs_grid(sweep: "bandwidth.Sweep", mark: tuple[float, float] | None = None, gpu="H200", ax=None):
    s = hardware.spec(gpu)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4.2))
    for b in sorted({p.block for p in sweep.select()}):
        pts = sweep.select(b)
        ax.plot([p.grid for p in pts], [p.tbs for p in pts], "o-", ms=3.5, color=COLORS.get(b), label=f"block {b}")
    ax.axhline(sweep.copy_tbs, color="k", ls="--", lw=1, label=f"copy ceiling {sweep.copy_tbs:.2f} TB/s")
    ax.text(1.1, sweep.copy_tbs * 1.02, f"D2D copy ceiling {sweep.copy_tbs:.2f} TB/s (read + write)", fontsize=9)
    ax.axvline(s.sm_count, color="grey", ls=":", lw=1)
    ax.text(s.sm_count * 1.05, 0.15, f"{s.sm_count} SMs", fontsize=9, color="grey")
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("grid (blocks)")
    ax.set_ylabel("achieved read bandwidth (TB/s)")
    ax.set_ylim(0, sweep.copy_tbs * 1.15)
    ax.set_title("Streaming read of 1 GiB (float4, 4 loads in flight per thread)")
    ax.legend(loc="lower right", fontsize=9)
    ax.grid(alpha=0.3)
    return fig or ax.figure


def bandwidth_vs_inflight(sweep: "bandwidth.Sweep", gpu="H200"):
    fig, ax = plt.subplots(figsize=(8, 4.2))
    markers = {(4, 4): "o", (4, 1): "^", (1, 4): "v", (1, 1): "x"}
    for (v, u), mk in markers.items():
        for b in sorted({p.block for p in sweep.points}):
            pts = sweep.select(b, v, u)
            if not pts:
                continue
            ax.plot([sweep.in_flight(p, gpu) / 1024 for p in pts], [p.tbs for p in pts], mk, ms=4,
                    color=COLORS.get(b), alpha=0.8,
                    label=f"block {b}, {v * 4} B x {u} in flight/thread")
    ax.axhline(sweep.copy_tbs, color="k", ls="--", lw=1, label=f"copy ceiling {sweep.copy_tbs:.2f} TB/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes in flight across the GPU (KiB) = resident threads x bytes per load x loads in flight")
    ax.set_ylabel("achieved read bandwidth (TB/s)")
    ax.set_title("Every launch shape on one curve: bandwidth follows bytes in flight")
    ax.legend(fontsize=9, ncol=1, loc="lower right", framealpha=0.9)    # the points climb from the lower left
    ax.grid(alpha=0.3, which="both")
    return fig


def staircases(stairs, ramp=None, mark: tuple[float, float] | None = None):
    n = 2 if ramp is not None else 1
    fig, axes = plt.subplots(1, n, figsize=(9, 4.4))
    axes = np.atleast_1d(axes)
    ax = axes[0]
    for st, c in zip(stairs, ("#1b9e77", "#d95f02", "#7570b3")):
        ax.plot(st.grids, st.medians, "o-", ms=3, color=c,
                label=f"{st.residency} block(s)/SM -> {st.blocks_per_wave} blocks per wave")
        for k in range(1, 4):
            ax.axvline(k * st.blocks_per_wave, color=c, ls=":", lw=0.8)
    ax.set_xlabel("grid (blocks)")
    ax.set_ylabel("kernel time (µs, median)")
    ax.set_title("fixed work per block:\ntime steps at each multiple of a wave")
    if mark:
        mark_chosen(ax, *mark)
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3)
    if ramp is not None:
        ax = axes[1]
        ax.plot(ramp.grids, ramp.medians, "o-", ms=3, color="#e7298a")
        for k in range(1, 4):
            ax.axvline(k * ramp.blocks_per_wave, color="grey", ls=":", lw=0.8)
        ax.set_xlabel("grid (blocks)")
        ax.set_ylabel("kernel time (µs, median)")
        ax.set_title(f"fixed bytes per block ({ramp.bytes_per_block // 1024} KiB, {ramp.blocks_per_wave} "
                     f"resident):\na ramp with small steps at each wave")
        ax.grid(alpha=0.3)
    for a in axes:
        a.xaxis.set_major_locator(MaxNLocator(4))
    fig.tight_layout(w_pad=2.0)
    return fig


def occupancy_vs_block(regs: int, smem: int, gpu="H200", mark_block: int | None = None):
    blocks = list(range(32, 1025, 32))
    occs = [occupancy.occupancy(b, regs, smem, gpu) for b in blocks]
    colors = {"warps": "#1b9e77", "registers": "#d95f02", "shared memory": "#7570b3", "block cap": "#e7298a"}
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for lim, c in colors.items():
        xs = [b for b, o in zip(blocks, occs) if o.limiter[0] == lim]
        ys = [100 * o.fraction for o, b in zip(occs, blocks) if o.limiter[0] == lim]
        if xs:
            ax.bar(xs, ys, width=24, color=c, label=f"limited by {lim}")
    if mark_block:
        o = occupancy.occupancy(mark_block, regs, smem, gpu)
        mark_chosen(ax, mark_block, 100 * o.fraction)
    ax.set_ylim(0, 105)
    ax.set_xlabel("block size (threads)")
    ax.set_ylabel("theoretical occupancy (%)")
    ax.set_title(f"{regs} registers/thread, {smem} B shared memory/block")
    ax.legend(fontsize=9, loc="lower left")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def achieved_vs_grid(data, mark: tuple[float, float] | None = None):
    """§1's streaming read: achieved occupancy from each launch's block timeline against its grid, beside ncu's
    reading of the same launch, the calculator's theoretical occupancy and the share of SMs with work."""
    cases = data.stream
    grids = [c.grid for c in cases]
    fig, ax = plt.subplots(figsize=(8, 3.9))
    ax.plot(grids, [100 * min(g, 132) / 132 for g in grids], "s:", color="0.55", ms=4, label="SMs with work (%)")
    ax.plot(grids, [c.theoretical_pct for c in cases], "--", color="0.2", lw=1.2,
            label="theoretical occupancy (calculator)")
    ax.plot(grids, [c.achieved_pct for c in cases], "o-", color="#1b9e77", label="achieved, from the block timeline")
    nc = [(c.grid, r.achieved_pct) for c in cases if (r := data.ncu_for(c.name)) is not None]
    if nc:
        ax.plot(*zip(*nc), "x", color="#d95f02", ms=8, mew=2, label="achieved, ncu (sm__warps_active)")
    bpw = cases[0].blocks_per_sm * 132
    for k in (1, 2):
        ax.axvline(k * bpw, color="#7570b3", ls=":", lw=1)
    ax.annotate(f"one wave = {bpw} blocks", (bpw, 75), fontsize=9, color="#7570b3", xytext=(-4, 0),
                textcoords="offset points", ha="right")
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"grid (blocks of {cases[0].block} threads), stream_read<4, 4>")
    ax.set_ylabel("percent")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(0.0, 0.6))   # clear of the 100 % line
    ax.grid(alpha=0.3)
    ax.set_title("Occupancy is a property of the launch: the grid has to supply the blocks", fontsize=10)
    fig.tight_layout()
    return fig


SLICE_COLORS = {16: "#1b9e77", 32: "#d95f02", 64: "#7570b3", 128: "#e7298a", 132: "#333333"}


def staircases_on_slices(d, sms: int | None = None, mark: tuple[float, float] | None = None):
    """§1 on smaller GPUs: fixed_work at 1 block per SM inside slices of N SMs (left), and where the measured
    step fell against N (right: the largest one-wave grid read from the times, beside the calculator's wave)."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 4.4), gridspec_kw={"width_ratios": [3, 2]})
    for s in d.staircases:
        bold = sms is None or s.sms == sms
        ax.plot(s.grids, s.medians, "o-", ms=3 if bold else 2, lw=1.6 if bold else 0.8, alpha=1 if bold else 0.35,
                color=SLICE_COLORS.get(s.sms, "k"),
                label=f"{s.sms} SMs" + (" (whole)" if "whole" in s.slice else ""))
        if s.step_blocks() and bold:
            ax.axvline(s.step_blocks() + 0.5, color=SLICE_COLORS.get(s.sms, "k"), ls=":", lw=0.9)
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("grid (blocks)")
    ax.set_ylabel("kernel time (µs, median, hot)")
    ax.set_title("the same kernel on smaller GPUs:\nthe first step falls one block past N")
    ax.legend(fontsize=9, loc="upper left")
    ax.grid(alpha=0.3)
    ns = [s.sms for s in d.staircases]
    ax2.plot(ns, ns, "--", color="grey", lw=1, label="calculator: N x 1")
    ax2.plot(ns, [s.step_blocks() for s in d.staircases], "o", ms=7, color="#d95f02",
             label="measured")
    for s in d.staircases:
        ax2.annotate(f"{s.step_blocks()}", (s.sms, s.step_blocks()), textcoords="offset points",
                     xytext=(-22, 4) if s.sms == max(d.sm_counts) else (6, -12), fontsize=9)
    ax2.set_xlabel("SMs in the slice (N)")
    ax2.set_ylabel("blocks in one wave")
    ax2.set_title("where the step falls")
    ax2.legend(fontsize=9, loc="upper left")
    ax2.grid(alpha=0.3)
    fig.tight_layout(w_pad=2.0)
    return fig
