"""§5's figure: what sharding heads does to main's KDA grid and time. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt

from launchlab.core import figure as _style  # noqa: F401 - the course's figure style
from launchlab.core import hardware
from launchlab.core.figure import mark_chosen

from launchlab.kernels import kda_decode
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s05_sharding import audit


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


def step_launches(profile, rows, title_dimension: str = "head"):
    """§5: every launch of the decode step with a grid of the course's own, by its wave fill (x: the share of
    the machine's resident slots its grid fills, blocks / (resident per SM x SMs), audit.wave_fill) and its time
    per call in the step (y, log); those the audit derives from `title_dimension` highlighted, and the MLA split
    marked: by blocks / SMs it covers the machine, by wave fill it leaves half of it idle. The one a fix should
    target is both left (starved) and high (slow)."""
    sms = hardware.spec("H200").sm_count
    fig, ax = plt.subplots(figsize=(9, 4.2))
    mine = {r.role for r in rows}
    cheapest = min(r.us_per_call for r in profile.rows if r.grid)
    for r in profile.rows:
        if not r.grid:
            continue
        blocks = 1
        for g in r.grid:
            blocks *= g
        fill, resident = audit.wave_fill(r, sms)
        x = 100 * min(blocks, sms) / sms if fill is None else fill
        hit = r.role in mine
        ax.scatter([x], [r.us_per_call], s=55 if hit else 30, color="#d95f02" if hit else "0.6", zorder=3,
                   edgecolor="k" if hit else "none", lw=0.6)
        if r.role == "mla.split":
            ax.scatter([x], [r.us_per_call], s=160, facecolor="none", edgecolor="#7570b3", lw=1.6, zorder=4)
            ax.annotate(f"mla.split: {blocks} blocks = {100 * min(blocks, sms) / sms:.0f} % of the SMs, but "
                        f"{resident} fit an SM:\n{x:.0f} % wave fill (main's floor; notebook 04 derives it)",
                        (x, r.us_per_call), xytext=(10, -4), textcoords="offset points", fontsize=9,
                        color="#7570b3", ha="left", va="top")
        elif hit and (r.us_per_call > 3 * cheapest or x > 50):
            ax.annotate(f"{r.role} ({blocks} blocks)", (x, r.us_per_call), xytext=(6, 2),
                        textcoords="offset points", fontsize=9.5, ha="left" if x < 70 else "right")
    ax.axvline(50, color="0.4", ls=":", lw=1)
    ax.axhline(cheapest, color="0.4", ls="--", lw=1)
    ax.annotate(f"the step's cheapest launch, {cheapest:.2f} µs", (100, cheapest), xytext=(-2, 4),
                textcoords="offset points", ha="right", fontsize=9, color="0.3")
    ax.set_yscale("log")
    ax.set_xlim(0, 105)
    ax.annotate("← under half a wave", (50, 0.16), xycoords=("data", "axes fraction"), xytext=(-4, 0),
                textcoords="offset points", ha="right", fontsize=9, color="0.3")
    ax.set_xlabel(f"wave fill: blocks / (blocks an SM holds x {sms} SMs), at most 100 (%)")
    ax.set_ylabel("µs per call, in the step (graph)")
    ax.scatter([], [], s=55, color="#d95f02", edgecolor="k", lw=0.6, label=f"grid derived from '{title_dimension}'")
    ax.scatter([], [], s=30, color="0.6", label="every other launch of the course's own kernels")
    norm = max((r for r in profile.rows if r.grid == [1] and r.kernel.startswith("rms_norm")),
               key=lambda r: r.us_per_call, default=None)
    if norm is not None:
        ax.annotate("the norms: one block each (§2)", (audit.wave_fill(norm, sms)[0] or 0, norm.us_per_call),
                    xytext=(8, 8),
                    textcoords="offset points", fontsize=9, color="0.35")
    ax.set_ylim(cheapest * 0.7, None)
    ax.legend(loc="center right", fontsize=9)
    ax.grid(alpha=0.3)
    ax.set_title("Starved and slow is the target; starved and one launch long is fine", fontsize=10.5)
    fig.tight_layout()
    return fig


ARM_STYLE = {"main": ("#d95f02", "main: 12 blocks"), "fix": ("#7570b3", "the fix: 48 blocks"),
             "tuned": ("#1b9e77", "tuned: 48 blocks")}


def kda_on_slices(d, sms: int | None = None, arm: str | None = None):
    """Starvation relative to the machine: main's 12 blocks, the fix's 48 and the tuned kernel inside slices of N
    SMs -- cold time per step against the slice's floor (left), and the ratio (right; labels: the SMs main's
    blocks ran on). The slices are evenly spaced on the x axis (16, 32, 64, 128 and the whole 132); an explorer's
    slice and arm are marked, the other arms drawn faint."""
    ns = d.sm_counts
    xs = list(range(len(ns)))
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 4.6))
    floors: dict[tuple, list[str]] = {}             # arms that move the same bytes share one floor line
    for name, (c, lab) in ARM_STYLE.items():
        alpha = 1.0 if arm in (None, name) else 0.3
        ax.plot(xs, [d.at(n).arm(name).cold.median for n in ns], "o-", color=c, alpha=alpha, label=lab)
        ax2.plot(xs, [d.at(n).ratio(name) for n in ns], "o-", color=c, alpha=alpha, label=name)
        floors.setdefault(tuple(round(d.at(n).diagnose(name).floor_us, 3) for n in ns), []).append(name)
    for (vals, names), style in zip(floors.items(), ("s:", "^--", "v-.")):
        mb = d.at(ns[-1]).arm(names[0]).bytes / 1e6
        ax.plot(xs, vals, style, ms=4, color="#555555", lw=1.2,
                label=f"floor of {mb:.2f} MB on the slice ({', '.join(names)})")
    for x, n in zip(xs, ns):
        s = d.at(n)
        ax2.annotate(f"{s.stamped('main').distinct_sms} of {n}", (x, s.ratio("main")), textcoords="offset points",
                     xytext=(-16, 8), fontsize=9, color="#d95f02")
    for a in (ax, ax2):
        a.set_xticks(xs)
        a.set_xticklabels([f"{n}" + ("\n(whole)" if n == ns[-1] else "") for n in ns])
        a.set_xlabel("SMs in the slice (N)")
        a.set_xlim(-0.4, len(ns) - 0.6)
        a.grid(alpha=0.3)
    if sms is not None and sms in ns:
        chosen = arm or "main"
        mark_chosen(ax2, ns.index(sms), d.at(sms).ratio(chosen))
    ax.set_yscale("log")
    ax.set_ylim(0.3, 600)           # room above the lines for the legend
    ax.set_ylabel("µs per step (median, cold L2)")
    ax.set_title("cold time per step and its floor")
    ax.legend(fontsize=9, loc="upper right", ncol=1)
    ax2.set_ylim(0, max(d.at(n).ratio("main") for n in ns) * 1.2)
    ax2.set_ylabel("ratio to the slice's floor")
    ax2.set_title("how far from the floor\n(labels: SMs main's 12 blocks ran on)")
    ax2.legend(fontsize=9, loc="upper left")
    fig.tight_layout(w_pad=2.0)
    return fig
