"""§1's benchmark (live): the peak streaming read against the copy ceiling, and the gate arms ABBA."""
from __future__ import annotations

import statistics

from launchlab.core import gates, timing
from launchlab.kernels import stream_read


def bench_stream() -> None:
    sr = stream_read.StreamRead()
    print("§1 streaming read vs device-to-device copy, interleaved (1 GiB, events, TB/s)")
    print(f"{'rep':>3} {'copy r+w':>10} {'read 4096x1024':>15} {'ratio':>7}")
    ratios = []
    for i in range(5):
        c = sr.copy_ceiling(reps=5)
        r = sr.time(4096, 1024, reps=5, vec=4, unroll=4)
        ct = stream_read.tb_per_s(2 * sr.nbytes, c.median)
        rt = stream_read.tb_per_s(sr.nbytes, r.median)
        ratios.append(rt / ct)
        print(f"{i:>3} {ct:>10.3f} {rt:>15.3f} {rt / ct:>7.3f}")
    print(f"median read/copy ratio: {statistics.median(ratios):.3f}\n")

    for grid, block in ((132, 256), (4096, 1024)):
        def arm(vec, unroll):
            def run():
                with gates.setting(STREAM_VEC=str(vec), STREAM_UNROLL=str(unroll)):
                    return sr.time(grid, block, reps=5)
            return run
        res = timing.abba(arm(1, 1), arm(4, 4), pairs=3,
                          labels=("baseline VEC=1 UNROLL=1", "default VEC=4 UNROLL=4"))
        print(f"gate arms at grid {grid}, block {block} (one build, ABBA; per-rep medians in µs):")
        print(res.table())
        print(f"speed-up of the default arm: {1 / res.ratio():.2f}x\n")
