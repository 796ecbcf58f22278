"""What every figure of the course shares: one colour per block size, and one convention for the point a
learner chose (a slider position, the configuration a cell talks about): `mark_chosen(ax, x, y)`, an open
black square; figures that can show a chosen point take `mark=(x, y)` in their own data coordinates. The
block-timeline figure (§1 and §3) lives here too. Each section's own figures are in its folder."""
from __future__ import annotations

import matplotlib.pyplot as plt

COLORS = {128: "#1b9e77", 256: "#d95f02", 512: "#7570b3", 1024: "#e7298a"}


def mark_chosen(ax, x: float, y: float) -> None:
    """The chosen point: an open black square, the same on every figure."""
    ax.plot([x], [y], "s", ms=11, mfc="none", mec="k", mew=2, zorder=5)


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
