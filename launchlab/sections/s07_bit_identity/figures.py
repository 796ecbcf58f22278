"""§7's figure: where two arms' dumps start to differ, layer by layer. Each takes the section's typed result (live or recorded) and returns a matplotlib Figure."""
from __future__ import annotations

import matplotlib.pyplot as plt

from launchlab.core import figure as _style  # noqa: F401 - the course's figure style
import numpy as np


def divergence(case, layers: int):
    """§7: where two arms' bytes part: for each decoded position (rows) and layer (columns), the share of the
    residual stream after the layer whose bytes differ; a dot where a KDA layer's own output differs; the
    greedy tokens of both arms at the right."""
    fig, ax = plt.subplots(figsize=(8.4, 0.55 * len(case.steps) + 1.9))
    rows = []
    for pos, _, _, _ in case.steps:
        d = case.per_position.get(str(pos), {})
        rows.append([d.get(f"hidden.L{i}", 0) / 7168 for i in range(layers)])
    from matplotlib.colors import BoundaryNorm, ListedColormap
    # discrete bins, so "none" (white), a few elements and nearly all of them read as different colours
    bounds = [0.5 / 7168, 1e-3, 1e-2, 0.1, 0.5, 1.0]
    cmap = ListedColormap(["#fee391", "#fdae61", "#f46d43", "#d73027", "#67000d"])
    arr = np.ma.masked_equal(np.array(rows), 0.0)               # identical: left white
    im = ax.imshow(arr, aspect="auto", cmap=cmap, norm=BoundaryNorm(bounds, cmap.N), interpolation="nearest")
    for r, (pos, _, _, _) in enumerate(case.steps):
        d = case.per_position.get(str(pos), {})
        ks = [i for i in range(layers) if d.get(f"kda_out.L{i}", 0)]
        ax.plot(ks, [r] * len(ks), ".", color="#1b9e77", ms=4)
    ax.set_yticks(range(len(case.steps)),
                  [f"{p:,}: {a} / {b}{' (differ)' if a != b else ''}" for p, _, a, b in case.steps], fontsize=9)
    ax.set_ylabel("position: next token, both arms")
    ax.set_xlabel("layer (dots: a KDA layer's output differs)")
    cb = fig.colorbar(im, ax=ax, fraction=0.04, ticks=bounds)
    cb.ax.set_yticklabels(["1 element", "0.1 %", "1 %", "10 %", "50 %", "all"])
    cb.set_label("share of the residual stream that differs\n(white: none)")
    first = case.first
    ax.set_title(f"{case.name} at ctx {case.ctx:,}: first difference at {first[0]:,}, {first[1]}"
                 if first else f"{case.name} at ctx {case.ctx:,}: identical", fontsize=10)
    fig.tight_layout()
    return fig
