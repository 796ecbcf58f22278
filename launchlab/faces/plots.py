"""The course's figures. Each takes a section's typed result (live or recorded) and returns a matplotlib Figure.

One convention marks the point a learner chose (a slider position, the configuration a cell talks about):
`mark_chosen(ax, x, y)`, an open black square. Figures that can show a chosen point take `mark=(x, y)` in
their own data coordinates.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from launchlab.core import diagnosis, hardware, occupancy
from launchlab.kernels import kda_decode, mla
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s02_width import frontier
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s04_derive import derive
from launchlab.sections.s06_one_binary import accuracy, onebinary, pdlchain
from launchlab.sections.s09_lab import lab

COLORS = {128: "#1b9e77", 256: "#d95f02", 512: "#7570b3", 1024: "#e7298a"}


def mark_chosen(ax, x: float, y: float) -> None:
    """The chosen point: an open black square, the same on every figure."""
    ax.plot([x], [y], "s", ms=11, mfc="none", mec="k", mew=2, zorder=5)


def bandwidth_vs_grid(sweep: "bandwidth.Sweep", mark: tuple[float, float] | None = None, gpu="H200", ax=None):
    s = hardware.spec(gpu)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, 4.2))
    for b in sorted({p.block for p in sweep.select()}):
        pts = sweep.select(b)
        ax.plot([p.grid for p in pts], [p.tbs for p in pts], "o-", ms=3.5, color=COLORS.get(b), label=f"block {b}")
    ax.axhline(sweep.copy_tbs, color="k", ls="--", lw=1)
    ax.text(1.1, sweep.copy_tbs * 1.02, f"D2D copy ceiling {sweep.copy_tbs:.2f} TB/s (read + write)", fontsize=8)
    ax.axvline(s.sm_count, color="grey", ls=":", lw=1)
    ax.text(s.sm_count * 1.05, 0.15, f"{s.sm_count} SMs", fontsize=8, color="grey")
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("grid (blocks)")
    ax.set_ylabel("achieved read bandwidth (TB/s)")
    ax.set_ylim(0, sweep.copy_tbs * 1.15)
    ax.set_title("Streaming read of 1 GiB (float4, 4 loads in flight per thread)")
    ax.legend(loc="lower right", fontsize=8)
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
    ax.axhline(sweep.copy_tbs, color="k", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes in flight across the GPU (KiB) = resident threads x bytes per load x loads in flight")
    ax.set_ylabel("achieved read bandwidth (TB/s)")
    ax.set_title("Every launch shape on one curve: bandwidth follows bytes in flight")
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    ax.grid(alpha=0.3, which="both")
    return fig


def staircases(stairs, ramp=None, mark: tuple[float, float] | None = None):
    n = 2 if ramp is not None else 1
    fig, axes = plt.subplots(1, n, figsize=(12 if n == 2 else 8, 4.2))
    axes = np.atleast_1d(axes)
    ax = axes[0]
    for st, c in zip(stairs, ("#1b9e77", "#d95f02", "#7570b3")):
        ax.plot(st.grids, st.medians, "o-", ms=3, color=c,
                label=f"{st.residency} block(s)/SM -> {st.blocks_per_wave} blocks per wave")
        for k in range(1, 4):
            ax.axvline(k * st.blocks_per_wave, color=c, ls=":", lw=0.8)
    ax.set_xlabel("grid (blocks)")
    ax.set_ylabel("kernel time (us, median)")
    ax.set_title("fixed work per block: time steps at every multiple of blocks per wave")
    if mark:
        mark_chosen(ax, *mark)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    if ramp is not None:
        ax = axes[1]
        ax.plot(ramp.grids, ramp.medians, "o-", ms=3, color="#e7298a")
        for k in range(1, 4):
            ax.axvline(k * ramp.blocks_per_wave, color="grey", ls=":", lw=0.8)
        ax.set_xlabel("grid (blocks)")
        ax.set_ylabel("kernel time (us, median)")
        ax.set_title(f"fixed bytes per block ({ramp.bytes_per_block // 1024} KiB, {ramp.blocks_per_wave} "
                     f"resident):\na ramp with small steps at each wave")
        ax.grid(alpha=0.3)
    fig.tight_layout()
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
    ax.legend(fontsize=8, loc="lower left")
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def rms_times(rec, widths):
    fig, ax = plt.subplots(figsize=(8, 3.8))
    x = np.arange(len(widths))
    for i, (arm, c, lab) in enumerate((("original", "#d95f02", "original: 1 block x 128 scalar threads"),
                                       ("wide", "#1b9e77", "widened apply (block sized to the width, float4)"),
                                       ("cupy", "#7570b3", "CuPy array operations (8 kernels)"))):
        t = [getattr(rec.times(n), arm) for n in widths]
        ax.bar(x + (i - 1) * 0.27, [v.median for v in t], 0.27, color=c, label=lab,
               yerr=[[v.median - v.min for v in t], [v.max - v.median for v in t]], capsize=2)
    ax.set_xticks(x, [str(n) for n in widths])
    ax.set_xlabel("row width (hidden size)")
    ax.set_ylabel("us per norm (327 per CUDA graph)")
    ax.set_title("RMS norm, one row per launch: median with min..max over reps")
    ax.set_ylim(0, max(rec.times(n).cupy.max for n in widths) * 1.45)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def rms_blocks(t, mark: tuple[float, float] | None = None):
    """The widened apply's time against its block size at one width (a rmsnorm.WidthTiming)."""
    fig, ax = plt.subplots(figsize=(7, 2.6))
    blocks = sorted(t.wide_blocks)
    ax.plot(blocks, [t.wide_blocks[b].median for b in blocks], "o-", color="#1b9e77", label="widened apply")
    ax.axhline(t.original.median, color="#d95f02", ls="--", label="original (128 threads)")
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"block size of the widened apply (width {t.n})")
    ax.set_ylabel("us per norm (hot L2)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def frontier_model(saving_ms: float, rounds, gate: float = 0.02):
    fig, ax = plt.subplots(figsize=(8, 3.8))
    ms = np.linspace(max(saving_ms * 2, 5), 80, 300)
    ax.plot(ms, [100 * frontier.gain(m, saving_ms) for m in ms], color="#1b9e77",
            label=f"a fixed saving of {saving_ms:.3f} ms/token")
    ax.axhline(100 * gate, color="k", ls="--", lw=1, label=f"significance gate ({gate:.0%})")
    for r in rounds:
        ax.plot([1000 / r.main_tok_s], [100 * r.over_frontier], "o", color="#d95f02")
        ax.annotate(f"#71 round {r.round}", (1000 / r.main_tok_s, 100 * r.over_frontier), fontsize=8,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("main's time per token (ms): the frontier gets faster to the left")
    ax.set_ylabel("gain over the frontier (%)")
    ax.set_title("The same diff, measured against a moving main")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def kda_contention(alone, contended):
    """The same step alone and beside a streaming read, on one linear axis clipped at the 99th percentile of
    the contended reps (the reps beyond it are counted in the legend, not hidden)."""
    fig, ax = plt.subplots(figsize=(8, 3.4))
    hi = float(np.percentile(contended.reps_us, 99)) * 1.02
    lo = min(alone.min, contended.min) * 0.98
    bins = np.linspace(lo, hi, 80)
    for t, c, name in ((alone, "#1b9e77", "alone"), (contended, "#d95f02", "beside a streaming read")):
        r = np.asarray(t.reps_us)
        beyond = int(np.sum(r > hi))
        ax.hist(np.clip(r, lo, hi), bins=bins, alpha=0.75, color=c,
                label=f"{name}: median {t.median:.2f} us, robust spread {diagnosis.robust_spread(r):.1%}, "
                      f"p99 {np.percentile(r, 99):.2f} us" + (f", {beyond} rep(s) beyond {hi:.1f} us "
                                                             f"(max {r.max():.0f})" if beyond else ""))
    ax.set_xlabel(f"time of one decode step (us, CUDA events per launch, {alone.l2} L2; linear)")
    ax.set_ylabel("reps")
    ax.set_title("Alone the step repeats tightly; beside other work it shifts and spreads")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def kda_tp(data: "kda.KDAData", ceiling_tbs: float | None = None):
    """§5: time and achieved bandwidth per decode step against tp, cold L2: main's kernel, the fix, the tuned."""
    tps = [1, 2, 4, 8]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    arms = (("walk", kda_decode.V, "store", "#d95f02", "main: grid = n_head, walk, staged"),
            ("walk", kda_decode.BV_TILED, "rn", "#7570b3", "the fix: value tiles BV = 32, elided"),
            ("tuned", kda_decode.BV_TILED, "rn", "#1b9e77", "tuned kernel, BV = 32"))
    for body, bv, m, c, lab in arms:
        pts = [data.point(tp, bv, m, body) for tp in tps]
        axes[0].plot(tps, [p.cold.median for p in pts], "o-", color=c, label=lab)
        axes[1].plot(tps, [p.tbs_cold for p in pts], "o-", color=c, label=lab)
        for tp, p in zip(tps, pts):
            axes[0].annotate(f"{p.blocks}", (tp, p.cold.median), fontsize=7, xytext=(4, 3),
                             textcoords="offset points", color=c)
    if ceiling_tbs:
        axes[1].axhline(ceiling_tbs, color="0.4", ls="--", lw=1)
        axes[1].annotate(f"copy ceiling {ceiling_tbs:.2f} TB/s", (8, ceiling_tbs), fontsize=7, color="0.3",
                         xytext=(-4, -10), textcoords="offset points", ha="right")
    axes[0].set_ylabel("us per decode step (CUDA graph, cold L2)")
    axes[1].set_ylabel("achieved bandwidth, cold (TB/s)")
    axes[0].set_ylim(bottom=0)
    axes[1].set_ylim(bottom=0)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(tps, [f"tp={t}\n{kda.HEADS_TP[t]} heads" for t in tps])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="center right")
    axes[0].set_title("Sharding cuts the work 8x; main's time does not move\n(numbers: blocks in the grid)",
                      fontsize=10)
    axes[1].set_title("...so the bandwidth it achieves falls with its grid", fontsize=10)
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
                ax.annotate(f"{p.blocks}", (p.bv, p.timing.median), fontsize=7, xytext=(4, -10),
                            textcoords="offset points", color="0.3")
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xscale("log", base=2)
    ax.set_xticks(bvs, [str(b) for b in bvs])
    ax.set_xlabel(f"BV (value tile); numbers: blocks in the grid at tp={tp}, {kda.HEADS_TP[tp]} heads")
    ax.set_ylabel(f"us per step ({body}, hot L2)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="lower left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig

def block_timelines(cases, sm_count: int = 132):
    """One panel per launch: every block as a bar on the row of the SM it ran on, from its start to its end
    (%globaltimer, us). Blocks that shared an SM at once are stacked inside its row; a later wave is drawn in
    a second colour. Empty rows are SMs the launch never used."""
    n = len(cases)
    fig, axes = plt.subplots(1, n, figsize=(4.1 * n, 3.9), sharey=True, squeeze=False)
    wave_colors = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a")
    for ax, c in zip(axes[0], cases):
        t = c.timeline
        wave_of = {b: i for i, w in enumerate(t.waves()) for b in w}
        slots: dict[int, list[int]] = {}
        for b in sorted(range(t.grid), key=lambda x: t.start_ns[x]):
            ends = slots.setdefault(t.sm[b], [])
            k = next((i for i, e in enumerate(ends) if e <= t.start_ns[b]), len(ends))
            if k == len(ends):
                ends.append(0)
            ends[k] = t.end_ns[b]
            depth = max(1, t.max_resident_per_sm())
            h = 0.9 / depth
            ax.broken_barh([(t.start_ns[b] / 1e3, (t.end_ns[b] - t.start_ns[b]) / 1e3)],
                           (t.sm[b] - 0.45 + k * h, h * 0.92), color=wave_colors[wave_of[b] % 4], lw=0)
        ax.set_ylim(sm_count - 0.5, -0.5)
        ax.set_xlim(0, t.span_ns / 1e3 * 1.02)
        ax.set_xlabel("time since the first block started (us)")
        waves = len(t.waves())
        ax.set_title(f"{c.name}\n{t.grid} blocks x {t.block} threads on {t.sms_with_work} of {sm_count} SMs"
                     + (f", {waves} waves" if waves > 1 else ""), fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_ylabel("SM (%smid)")
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
    ax.annotate(f"one wave = {bpw} blocks", (bpw, 75), fontsize=8, color="#7570b3", xytext=(-4, 0),
                textcoords="offset points", ha="right")
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"grid (blocks of {cases[0].block} threads), stream_read<4, 4>")
    ax.set_ylabel("percent")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    ax.set_title("Occupancy is a property of the launch: the grid has to supply the blocks", fontsize=10)
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
                ax.annotate(f"{v:.0f}", (b.get_x() + b.get_width() / 2, v), ha="center", fontsize=7,
                            xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x, [f"{c.name}\n{c.grid} x {c.block}" for c in cases])
    ax.set_ylabel("percent")
    ax.set_ylim(0, 130)
    ax.legend(fontsize=7, ncol=4, loc="upper center", framealpha=1)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("What each launch could hold, and what it held", fontsize=10)
    fig.tight_layout()
    return fig


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
            label=f"slot model, fitted at 132 and 264 ({model.slots} slots)")
    floor = mla.floors(data.ctx, copy_tbs=data.copy_tbs).memory_us
    ax.axhline(floor, color="#d95f02", lw=1, ls=":")
    ax.annotate(f"memory floor {floor:.1f} us (151 MB at {data.copy_tbs:.2f} TB/s)", (600, floor), ha="right",
                xytext=(0, 4), textcoords="offset points", fontsize=8, color="#d95f02")
    for g in (132, 264, 528):
        ax.axvline(g, color="0.8", lw=1)
        ax.annotate(f"{g}", (g, ax.get_ylim()[1] if False else 0), fontsize=7, color="0.4", xytext=(2, 2),
                    textcoords="offset points")
    for g, lab in ((128, "hardcoded\n128"), (256, "derived\n256")):
        a = next(p for p in pts if p.grid == g)
        ax.annotate(lab, (g, a.us), xytext=(0, 12), textcoords="offset points", ha="center", fontsize=8,
                    arrowprops=dict(arrowstyle="-", color="0.5", lw=0.6))
    if mark:
        mark_chosen(ax, *mark)
    ax.set_xlabel("split blocks in the grid (16 heads, batch 1: grid = splits)")
    ax.set_ylabel("us per decode (split + combine), cold")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(f"MLA decode at ctx {data.ctx:,}: steps at 132 and 264 blocks (one and two per SM)", fontsize=10)
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
            ax.annotate(f"{a.grid}", (t, a.us), xytext=(4, -10 if fl == "derived" else 5), textcoords="offset points",
                        fontsize=7, color=c)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks([50, 100, 200, 300])
    ax.set_xticks(tps, [f"tp={t}\n{derive.HEADS_TP[t]} heads" for t in tps])
    ax.set_ylabel("us per decode, cold (log)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
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
                xytext=(6, 8), textcoords="offset points", fontsize=8)
    for g in (model.sm_count, model.slots, 2 * model.slots):
        ax.axvline(g, color="0.85", lw=1)
    ax.set_xlabel("split blocks in the grid (splits x head tiles)")
    ax.set_ylabel("us per decode")
    ax.set_xlim(0, max(xs[-1], derived.grid, hx) * 1.05)
    hy = model.predict(hx, hardcoded.slice_tokens)
    ax.set_ylim(0, 2.2 * max(dy, hy, min(ys)))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def step_profile(main, fixed, top: int = 14):
    """§6: where one decode step's time goes, per role (calls x µs per call), under `main` and the fixed
    defaults -- the roles a planted gate changes in colour. Both profiles at the same context, in-step times."""
    fig, ax = plt.subplots(figsize=(8.4, 4.6))
    per = {}
    for which, p in (("main", main), ("fixed", fixed)):
        for r in p.rows:
            d = per.setdefault(r.role, {"main": 0.0, "fixed": 0.0, "planted": False})
            d[which] += r.us_per_token / 1e3
            d["planted"] |= onebinary.planted(r)
    roles = sorted(per, key=lambda k: -max(per[k]["main"], per[k]["fixed"]))[:top][::-1]
    y = np.arange(len(roles))
    for off, which, alpha in ((0.2, "main", 1.0), (-0.2, "fixed", 0.45)):
        ax.barh(y + off, [per[k][which] for k in roles], height=0.38, alpha=alpha,
                color=["#d95f02" if per[k]["planted"] else "#7570b3" for k in roles],
                label=f"{which}: {p_sum(main if which == 'main' else fixed):.2f} ms in all")
    ax.set_yticks(y, roles, fontsize=8)
    ax.set_xlabel(f"ms per token, in-step (ctx {main.ctx:,}; dark: main, light: fixed)")
    ax.grid(alpha=0.3, axis="x")
    handles = [plt.Rectangle((0, 0), 1, 1, color="#d95f02"), plt.Rectangle((0, 0), 1, 1, color="#7570b3")]
    ax.legend(handles, ["a planted gate changes it", "the same in both arms"], fontsize=8, loc="lower right")
    ax.set_title(f"One decode step, {main.launches:,} launches: main {main.step_us / 1e3:.2f} ms, fixed "
                 f"{fixed.step_us / 1e3:.2f} ms (graph-timed)", fontsize=10)
    fig.tight_layout()
    return fig


def p_sum(p) -> float:
    return p.sum_us / 1e3


def instruments(data):
    """§6: the same two arms through both instruments -- eval at the long context, bench's marginal at the short
    one -- per rep, with each instrument's gain."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4), sharey=False)
    panels = (("eval", f"eval: ctx {data.ctx:,}, {data.eval.abba.results[0].launches_per_rep} tokens per graph",
               {"fixed": data.eval.ms("A"), "main": data.eval.ms("B")}, data.eval_gain_pct),
              ("bench", f"bench: ctx {data.short_ctx:,}, ({data.bench.long} - {data.bench.short}) tokens marginal",
               {"fixed": data.bench.arm("A"), "main": data.bench.arm("B")}, data.bench_gain_pct))
    for ax, (name, title, arms, gain) in zip(axes, panels):
        for i, (arm, c) in enumerate((("main", "#d95f02"), ("fixed", "#1b9e77"))):
            reps = arms[arm]
            ax.plot([i] * len(reps), reps, "o", color=c, ms=6, alpha=0.7)
            ax.annotate(f"{np.median(reps):.2f} ms", (i, np.median(reps)), xytext=(10, -3),
                        textcoords="offset points", fontsize=8)
        ax.set_xticks([0, 1], ["main", "fixed"])
        ax.set_xlim(-0.5, 1.8)
        lo = min(min(v) for v in arms.values())
        hi = max(max(v) for v in arms.values())
        ax.set_ylim(lo - 0.08 * (hi - lo) - 0.1, hi + 0.15 * (hi - lo) + 0.1)
        ax.set_ylabel("ms per token (each dot a rep)")
        ax.set_title(f"{title}\nfixed is {gain:+.1f} % tok/s", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def divergence(case, layers: int):
    """§7: where two arms' bytes part: for each decoded position (rows) and layer (columns), the share of the
    residual stream after the layer whose bytes differ; a dot where a KDA layer's own output differs; the
    greedy tokens of both arms at the right."""
    fig, ax = plt.subplots(figsize=(8.4, 0.55 * len(case.steps) + 1.9))
    rows = []
    for pos, _, _, _ in case.steps:
        d = case.per_position.get(str(pos), {})
        rows.append([d.get(f"hidden.L{i}", 0) / 7168 for i in range(layers)])
    from matplotlib.colors import LogNorm
    arr = np.ma.masked_equal(np.array(rows), 0.0)               # identical: left white
    im = ax.imshow(arr, aspect="auto", cmap="Oranges", norm=LogNorm(vmin=1 / 7168, vmax=1), interpolation="nearest")
    for r, (pos, _, _, _) in enumerate(case.steps):
        d = case.per_position.get(str(pos), {})
        ks = [i for i in range(layers) if d.get(f"kda_out.L{i}", 0)]
        ax.plot(ks, [r] * len(ks), ".", color="#1b9e77", ms=4)
    ax.set_yticks(range(len(case.steps)),
                  [f"pos {p:,}: next token {a} / {b}{'  (differ)' if a != b else ''}" for p, _, a, b in case.steps],
                  fontsize=8)
    ax.set_xlabel("layer (dots: a KDA layer's output differs)")
    fig.colorbar(im, ax=ax, label="share of the residual stream\nthat differs (white: none)", fraction=0.03)
    first = case.first
    ax.set_title(f"{case.name} at ctx {case.ctx:,}: first difference at position {first[0]:,}, {first[1]}, "
                 f"element {first[2]}" if first else f"{case.name} at ctx {case.ctx:,}: identical", fontsize=9)
    fig.tight_layout()
    return fig


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


def pdl_timeline(data: "pdlchain.PDLData"):
    """The chain of widened norms, one row per launch, three chains side by side: block 0 from entry to the
    end of its wait (light) and from there to its last store (dark). With PDL each launch enters before its
    predecessor finishes; the opted-out launch enters only after."""
    fig, axes = plt.subplots(1, len(data.timelines), figsize=(11, 4.2), sharey=True)
    for ax, t in zip(axes, data.timelines):
        for i, (e, w, f) in enumerate(zip(t.entered, t.waited, t.finished)):
            out = i == t.opted_out
            ax.barh(i, (w - e) / 1e3, left=e / 1e3, height=0.8, color="#d95f02" if out else "#9ecae1")
            ax.barh(i, (f - w) / 1e3, left=w / 1e3, height=0.8, color="#a63603" if out else "#08519c")
        ax.set_title(f"{t.name}\n{t.per_launch_ns / 1e3:.2f} us per launch, typical gap {t.typical_gap_ns() / 1e3:+.2f} us",
                     fontsize=9)
        ax.set_xlabel("time from the first launch's entry (us)")
        ax.grid(alpha=0.3, axis="x")
    axes[0].set_ylabel("launch in the chain")
    axes[0].invert_yaxis()
    fig.legend(handles=[Patch(color="#9ecae1", label="entered, waiting (griddepcontrol.wait)"),
                        Patch(color="#08519c", label="working"),
                        Patch(color="#d95f02", label="the opted-out launch: waiting / working")],
               loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"{len(data.timelines[0].entered)} widened norms (n = {data.n:,}) in one CUDA graph, block 0's "
                 "%globaltimer stamps, one replay", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    return fig


def kl_positions(data: "accuracy.AccuracyData", ctx: int, floor: float = 1e-7):
    """KL(main || arm) per teacher-forced position, log scale; an arm whose logits are byte-identical at a
    position is drawn on the floor line, labelled as such (its KL is exactly 0)."""
    fig, ax = plt.subplots(figsize=(9, 4.2))
    arms = [a for a in data.arms if a.ctx == ctx and a.arm != "main again"]
    styles = ["o-", "s-", "^-", "v-", "D-", "x-", "+-"]
    for a, st in zip(arms, styles):
        y = [max(k, floor) for k in a.kl]
        label = f"{a.arm}: mean {a.mean_kl:.2e}, top-1 {a.top1_rate:.2f}" if not a.bytes_identical else \
            f"{a.arm}: KL 0, bytes identical"
        ax.plot(range(len(y)), y, st, ms=3.5, lw=1, label=label, alpha=0.85)
    ax.axhline(floor, color="grey", lw=0.8, ls=":")
    ax.text(0, floor * 1.4, "KL exactly 0 (logits byte-identical to main's) is drawn here", fontsize=8, color="grey")
    ax.set_yscale("log")
    ax.set_xlabel(f"position after ctx {ctx:,} (teacher-forced with main's tokens)")
    ax.set_ylabel("KL(main || arm), nats")
    ax.set_title(f"Accuracy against main on the {data.layers}-layer step, ctx {ctx:,}")
    ax.legend(fontsize=7, loc="center right")
    ax.grid(alpha=0.3, which="both")
    return fig
