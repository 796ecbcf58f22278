"""What every figure of the course shares: one colour per block size, and one convention for the point a
learner chose (a slider position, the configuration a cell talks about): `mark_chosen(ax, x, y)`, an open
black square; figures that can show a chosen point take `mark=(x, y)` in their own data coordinates. The
block-timeline figure (§1 and §3) lives here too. Each section's own figures are in its folder."""
from __future__ import annotations

import textwrap

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from launchlab.core import plotted

# The course's figure style: drawn at 100 dpi and at most 9 inches wide, so a figure shows at its own size in a
# notebook column of 900 px or more (a laptop's JupyterLab at 1366 x 768), where 10 pt type reads as 10 pt;
# nothing on a figure is set below 9 pt (legibility() checks both).
STYLE = {"figure.dpi": 100, "savefig.dpi": 100, "font.size": 10, "axes.titlesize": 10.5, "axes.labelsize": 10,
         "xtick.labelsize": 9.5, "ytick.labelsize": 9.5, "legend.fontsize": 9.5, "figure.titlesize": 11,
         "legend.framealpha": 0.92}
plt.rcParams.update(STYLE)
DISPLAY_PX = 900          # the narrowest notebook column the figures are made for
MIN_PT = 9.0              # the smallest type a figure may show, at its displayed size


def legibility(fig, display_px: int = DISPLAY_PX, min_pt: float = MIN_PT) -> list[str]:
    """What a learner could not read on this figure in a `display_px`-wide column: any text smaller than
    `min_pt` points once the figure is scaled to fit (a 96-dpi screen), and any two texts drawn over each other.
    An empty list is a readable figure."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    scale = min(1.0, display_px / (fig.get_figwidth() * fig.dpi))
    hidden = set()                        # labels of ticks outside the view: matplotlib keeps them, never draws them
    for a in fig.axes:
        for axis in (a.xaxis, a.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - 1e-9 * max(1.0, abs(hi)) <= tick.get_loc() <= hi + 1e-9 * max(1.0, abs(hi)):
                    hidden |= {id(tick.label1), id(tick.label2)}
    texts = [t for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip() and id(t) not in hidden]
    problems, boxes = [], []
    for t in texts:
        pt = t.get_fontsize() * fig.dpi * scale / 96
        if pt < min_pt - 0.05:
            problems.append(f"{pt:.1f} pt at {display_px} px: {t.get_text()[:40]!r}")
        boxes.append((t, t.get_window_extent(renderer)))
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1:]:
            w = min(a.x1, b.x1) - max(a.x0, b.x0)
            h = min(a.y1, b.y1) - max(a.y0, b.y0)
            if w > 2 and h > 2:
                problems.append(f"text over text: {ta.get_text()[:30]!r} / {tb.get_text()[:30]!r}")
    return problems


COLORS = {128: "#1b9e77", 256: "#d95f02", 512: "#7570b3", 1024: "#e7298a"}


def mark_chosen(ax, x: float, y: float) -> None:
    """The chosen point: an open black square, the same on every figure."""
    ax.plot([x], [y], "s", ms=11, mfc="none", mec="k", mew=2, zorder=5)


def block_timelines(cases, sm_count: int = 132):
    """One panel per launch: every block as a bar on the row of the SM it ran on, from its start to its end
    (%globaltimer, us). The colour is the block's wave (the legend names them); blocks that shared an SM at once
    are stacked inside its row, the second and later ones lighter, and a panel with any such SM magnifies its
    first rows in an inset, where the stacked bars can be seen (at 132 rows a row is 2 px). Empty rows are SMs
    the launch never used."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Patch
    n = len(cases)
    fig, axes = plt.subplots(1, n, figsize=(min(9.0, 3.1 * n), 4.6), sharey=True, sharex=True, squeeze=False)
    wave_colors = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a")
    lighter = lambda c: to_rgba(c, 0.45)              # noqa: E731  a block beside another on its SM
    most_waves, stacked = 1, False
    for ax, c in zip(axes[0], cases):
        t = c.timeline
        wave_of = {b: i for i, w in enumerate(t.waves()) for b in w}
        most_waves = max(most_waves, len(t.waves()))
        slots: dict[int, list[int]] = {}
        resident = max(1, t.max_resident_per_sm())
        h = 0.9 / resident                              # once per launch: it walks every SM's blocks
        bars = []
        for b in sorted(range(t.grid), key=lambda x: t.start_ns[x]):
            ends = slots.setdefault(t.sm[b], [])
            k = next((i for i, e in enumerate(ends) if e <= t.start_ns[b]), len(ends))
            if k == len(ends):
                ends.append(0)
            ends[k] = t.end_ns[b]
            color = wave_colors[wave_of[b] % 4]
            bars.append((t.sm[b], (t.start_ns[b] / 1e3, (t.end_ns[b] - t.start_ns[b]) / 1e3),
                         (t.sm[b] - 0.45 + k * h, h * 0.92), color if k == 0 else lighter(color)))
        for _, xr, yr, color in bars:
            ax.broken_barh([xr], yr, color=color, lw=0)
        ax.set_ylim(sm_count - 0.5, -0.5)
        ax.set_xlabel("time since the first block started (µs)")
        waves = len(t.waves())
        ax.set_title(textwrap.fill(c.name, 30) + f"\n{t.grid} x {t.block} threads, {t.sms_with_work} of {sm_count} SMs"
                     + (f"\n{waves} waves" if waves > 1 else ""), fontsize=9.5)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.grid(axis="x", alpha=0.3)
        if resident > 1:                                # the stacked blocks, where they can be seen
            stacked = True
            rows = sorted(slots)[:4]
            ins = ax.inset_axes([0.42, 0.30, 0.55, 0.40])
            for sm, xr, yr, color in bars:
                if sm in rows:
                    ins.broken_barh([xr], yr, color=color, lw=0)
            ins.set_ylim(max(rows) + 0.5, min(rows) - 0.5)
            ins.set_yticks(rows)
            ins.tick_params(labelsize=9)
            ins.xaxis.set_major_locator(MaxNLocator(3))
            ins.set_title(f"SMs {rows[0]}-{rows[-1]}, magnified", fontsize=9)
    axes[0][0].set_ylabel("SM (%smid)")
    span = max(c.timeline.span_ns for c in cases) / 1e3
    axes[0][0].set_xlim(0, span * 1.02)          # one time axis for every panel: the speed-up is their widths
    handles = ([Patch(color=wave_colors[i], label=f"wave {i + 1}") for i in range(most_waves)] if most_waves > 1
               else [Patch(color=wave_colors[0], label="every block (one wave)")])
    if stacked:
        handles.append(Patch(color=lighter(wave_colors[0]), label="a block beside another on its SM"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False)
    fig.tight_layout(w_pad=2.6, rect=(0, 0.06, 1, 1))
    return fig


# In a notebook, every figure's plain text is its plotted data's fingerprint (launchlab.core.plotted): nbval
# compares it with the committed one, so a plot that changed fails like a changed number.
plotted.register()
