"""§2's benchmark (live): the original against the widened RMS norm, ABBA per width, and CuPy's array operations."""
from __future__ import annotations

import statistics

from launchlab.kernels import rms_norm
from launchlab.sections.s02_width import rmsnorm


def bench_rms() -> None:
    print("§2 RMS norm, 327 launches per CUDA graph, per-launch µs (one build; ABBA per width)")
    for n in rmsnorm.WIDTHS:
        b = rms_norm.Bench(n)
        res = rmsnorm.abba(b)
        cu = b.time("cupy", reps=5)
        wide = statistics.median(res.medians("B"))
        print(f"n={n}:  " + "  ".join(f"{o}:{t.median:.3f}" for o, t in zip(res.order, res.results)))
        print(f"        widened/original = {res.ratio():.3f} ({1 - res.ratio():+.1%} time);  "
              f"CuPy array ops {cu.median:.3f} µs = {cu.median / wide:.2f}x the widened kernel")
