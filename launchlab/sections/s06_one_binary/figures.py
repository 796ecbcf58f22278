"""§6's figures: the decode step's profile and the two instruments. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt
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
