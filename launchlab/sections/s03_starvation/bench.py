"""§3's benchmark (live): grid = n_head against value tiles, ABBA; FLA's kernel beside them when installed."""
from __future__ import annotations

import statistics

from launchlab.sections.s03_starvation import kda


def bench_kda() -> None:
    print("§3 KDA decode step, K = V = 128: main's kernel (A: grid = n_head) against the fix (B: BV = 32), µs per "
          "step, cold L2 (a CUDA graph over rotating state copies); one build, ABBA")
    for h in (12, 96):
        res = kda.abba(n_head=h)
        print(f"n_head={h}:  " + "  ".join(f"{o}:{t.median:.3f}" for o, t in zip(res.order, res.results)))
        print(f"        tiled speed-up {1 / res.ratio():.2f}x")
        try:
            f = kda.fla_peer(h)
            fla_us = statistics.median(f.timing.reps_us)
            tiled = statistics.median(res.medians("B"))
            print(f"        FLA fused_recurrent_kda {fla_us:.3f} µs; ours/FLA = {tiled / fla_us:.2f}")
        except Exception as e:  # noqa: BLE001
            print(f"        FLA not measured: {type(e).__name__}: {e}")
