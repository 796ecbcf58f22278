"""§2's figures: the RMS norm's times and blocks, the moving frontier, the chain's PDL timeline, KL per position. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from launchlab.core.figure import mark_chosen
from launchlab.sections.s02_width import accuracy, frontier
from launchlab.sections.s06_one_binary import pdlchain


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
    ax.set_ylabel("µs per norm (327 per CUDA graph)")
    ax.set_title("RMS norm, one row per launch: median with min..max over reps")
    ax.set_ylim(0, max(rec.times(n).cupy.max for n in widths) * 1.45)
    ax.legend(fontsize=9, loc="upper left", ncol=2)
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
    ax.set_ylabel("µs per norm (hot L2)")
    ax.legend(fontsize=9)
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
        ax.annotate(f"#71 round {r.round}", (1000 / r.main_tok_s, 100 * r.over_frontier), fontsize=9,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("main's time per token (ms): the frontier gets faster to the left")
    ax.set_ylabel("gain over the frontier (%)")
    ax.set_title("The same diff, measured against a moving main")
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def pdl_timeline(data: "pdlchain.PDLData"):
    """The chain of widened norms, one row per launch, three chains side by side: block 0 from entry to the
    end of its wait (light) and from there to its last store (dark). With PDL each launch enters before its
    predecessor finishes; the opted-out launch enters only after."""
    fig, axes = plt.subplots(1, len(data.timelines), figsize=(9, 4.4), sharey=True)
    for ax, t in zip(axes, data.timelines):
        for i, (e, w, f) in enumerate(zip(t.entered, t.waited, t.finished)):
            out = i == t.opted_out
            ax.barh(i, (w - e) / 1e3, left=e / 1e3, height=0.8, color="#d95f02" if out else "#9ecae1")
            ax.barh(i, (f - w) / 1e3, left=w / 1e3, height=0.8, color="#a63603" if out else "#08519c")
        ax.set_title(f"{t.name}\n{t.per_launch_ns / 1e3:.2f} µs per launch, typical gap {t.typical_gap_ns() / 1e3:+.2f} µs",
                     fontsize=9)
        ax.set_xlabel("time from the first entry (µs)")
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.grid(alpha=0.3, axis="x")
    axes[0].set_ylabel("launch in the chain")
    axes[0].invert_yaxis()
    fig.legend(handles=[Patch(color="#9ecae1", label="entered, waiting (griddepcontrol.wait)"),
                        Patch(color="#08519c", label="working"),
                        Patch(color="#d95f02", label="the opted-out launch: waiting / working")],
               loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.suptitle(f"{len(data.timelines[0].entered)} widened norms (n = {data.n:,}) in one CUDA graph, block 0's "
                 "%globaltimer stamps, one replay", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95), w_pad=2.6)
    return fig


def kl_positions(data: "accuracy.AccuracyData", ctx: int, floor: float = 1e-7):
    """KL(main || arm) per teacher-forced position, log scale; an arm whose logits are byte-identical at a
    position is drawn on the floor line, labelled as such (its KL is exactly 0)."""
    fig, ax = plt.subplots(figsize=(9, 4.2))
    arms = [a for a in data.arms if a.ctx == ctx and a.arm != "main again"]
    same = [a.arm for a in arms if a.bytes_identical]
    styles = ["s-", "^-", "o-", "v-", "D-", "x-", "+-"]
    drawn = [a for a in arms if not a.bytes_identical]
    zero_somewhere = any(k == 0 for a in drawn for k in a.kl)
    for a, st in zip(drawn, styles):
        y = [max(k, floor) for k in a.kl]
        ax.plot(range(len(y)), y, st, ms=3.5, lw=1, alpha=0.85,
                label=f"{a.arm}: mean {a.mean_kl:.2e}, top-1 {a.top1_rate:.2f}")
    if zero_somewhere:
        ax.axhline(floor, color="grey", lw=0.8, ls=":")
        ax.text(0, floor * 1.4, "a position where the logits are byte-identical (KL exactly 0) is drawn here",
                fontsize=9, color="grey")
    if same:                                           # every position identical: listed, not drawn on a floor
        ax.text(0.01, 0.03, "byte-identical to main at every position (KL exactly 0):\n" + ", ".join(same),
                transform=ax.transAxes, fontsize=9, va="bottom", color="0.25",
                bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="0.7", lw=0.6))
    ax.set_yscale("log")
    lo = min([k for a in drawn for k in a.kl if k > 0] or [floor])
    ax.set_ylim(bottom=(floor if zero_somewhere else lo) / 30)
    ax.set_xlabel(f"position after ctx {ctx:,} (teacher-forced with main's tokens)")
    ax.set_ylabel("KL(main || arm), nats")
    ax.set_title(f"Accuracy against main on the {data.layers}-layer step, ctx {ctx:,}")
    ax.legend(fontsize=9, loc="center right")
    ax.grid(alpha=0.3, which="both")
    return fig
