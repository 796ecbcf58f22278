"""§6's figures: the decode step's profile and the two instruments. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt

from launchlab.core import figure as _style  # noqa: F401 - the course's figure style
import numpy as np

from launchlab.sections.s06_one_binary import onebinary


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
    ax.set_yticks(y, roles, fontsize=9)
    ax.set_xlabel(f"ms per token, in the step (ctx {main.ctx:,})")
    ax.grid(alpha=0.3, axis="x")
    handles = [plt.Rectangle((0, 0), 1, 1, color="#d95f02"), plt.Rectangle((0, 0), 1, 1, color="#d95f02", alpha=0.45),
               plt.Rectangle((0, 0), 1, 1, color="#7570b3"), plt.Rectangle((0, 0), 1, 1, color="#7570b3", alpha=0.45)]
    ax.legend(handles, ["main: a planted gate changes it", "fixed: the same kernel role, fixed",
                        "main: the same in both arms", "fixed: the same in both arms"], fontsize=9,
              loc="lower right", title="upper bar main, lower bar fixed", title_fontsize=9)
    ax.set_title(f"One decode step, {main.launches:,} launches: main {main.step_us / 1e3:.2f} ms, fixed "
                 f"{fixed.step_us / 1e3:.2f} ms (graph-timed)", fontsize=10)
    fig.tight_layout()
    return fig


def p_sum(p) -> float:
    return p.sum_us / 1e3


def instruments(data):
    """§6: the same two arms through both instruments -- eval at the long context, bench's marginal at the short
    one -- on one ms-per-token axis, so the two gaps can be compared by eye; every rep is its own dot (spread
    sideways, since an arm's reps agree to about 0.01 ms), and each gap is labelled with its tok/s gain."""
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.8), sharey=True)
    panels = (("eval", f"eval: ctx {data.ctx:,}\n{data.eval.abba.results[0].launches_per_rep} tokens per graph",
               {"fixed": data.eval.ms("A"), "main": data.eval.ms("B")}, data.eval_gain_pct),
              ("bench", f"bench: ctx {data.short_ctx:,}\n({data.bench.long} - {data.bench.short}) tokens, marginal",
               {"fixed": data.bench.arm("A"), "main": data.bench.arm("B")}, data.bench_gain_pct))
    every = [x for _, _, arms, _ in panels for v in arms.values() for x in v]
    for ax, (name, title, arms, gain) in zip(axes, panels):
        for i, (arm, c) in enumerate((("main", "#d95f02"), ("fixed", "#1b9e77"))):
            reps = arms[arm]
            xs = [i + (k - (len(reps) - 1) / 2) * 0.07 for k in range(len(reps))]
            ax.plot(xs, reps, "o", color=c, ms=6, alpha=0.85, label=f"{arm}, one dot per rep" if name == "eval" else None)
            ax.annotate(f"{np.median(reps):.2f} ms", (i, np.median(reps)), xytext=(16, -3),
                        textcoords="offset points", fontsize=9)
        m, f_ = np.median(arms["main"]), np.median(arms["fixed"])
        ax.annotate("", (0.5, f_), xytext=(0.5, m), arrowprops=dict(arrowstyle="->", color="0.3", lw=1.2))
        ax.text(0.56, (m + f_) / 2, f"{gain:+.1f} %\ntok/s", fontsize=10, va="center", color="0.2")
        ax.set_xticks([0, 1], ["main", "fixed"])
        ax.set_xlim(-0.5, 1.7)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    lo, hi = min(every), max(every)
    axes[0].set_ylim(lo - 0.12 * (hi - lo), hi + 0.12 * (hi - lo))
    axes[0].set_ylabel("ms per token (one axis for both)")
    fig.tight_layout()
    return fig
