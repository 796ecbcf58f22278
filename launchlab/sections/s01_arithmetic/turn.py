"""§1's your-turn launch: waves.cu's fixed_work at the grid, block and shared memory the learner writes.

Every thread runs the same chain of dependent FMAs (waves.ITERS) and writes one float, so a launch's time is
its number of waves times one block's time, as long as co-resident blocks leave each other's issue slots
alone. The dynamic shared memory is the third literal: the kernel barely touches it, but the calculator counts
it, and with it the learner sets how many blocks an SM holds (§1's fourth limit). It does store one float in it,
so a launch with less than 4 bytes would write past its allocation: refused. Timed in a CUDA graph of 10
launches, hot L2 (the kernel reads nothing; it writes one float per thread).
"""
from __future__ import annotations

import numpy as np

from launchlab.core import launch, loader, yourturn
from launchlab.kernels import waves

OUT_THREADS = 1 << 24          # the output buffer: one float per thread of the launch
LAUNCHES = 10

GRIDS = (1, 66, 131, 132, 133, 263, 264, 265, 396, 397, 527, 528, 529, 1056, 1057, 2112, 2113, 4224, 4225)
BLOCKS = (32, 64, 128, 256, 512, 1024)
SMEMS = (1024, 48 * 1024, 100 * 1024, 200 * 1024)
MIN_SMEM = 4                   # the kernel stores one float in its dynamic shared memory (residency_pad[0])


def rules(s: yourturn.Shape) -> None:
    if s.grid[1:] != (1, 1) or s.block[1:] != (1, 1):
        raise launch.LaunchError(f"fixed_work indexes blockIdx.x and threadIdx.x only: write a 1-D grid and block "
                                 f"(got grid {s.grid}, block {s.block}; the other threads would overwrite them)")
    if s.smem < MIN_SMEM:
        raise launch.LaunchError(f"fixed_work stores its result in its dynamic shared memory (residency_pad[0]), so "
                                 f"it needs at least {MIN_SMEM} bytes of it; got smem = {s.smem} (try 1024)")
    if s.blocks * s.threads > OUT_THREADS:
        raise launch.LaunchError(f"{s.blocks:,} blocks of {s.threads} threads write {s.blocks * s.threads:,} floats; "
                                 f"this cell's output buffer holds {OUT_THREADS:,} (one per thread): a smaller grid")


class Bench:  # pragma: no mutate block (live only)
    def __init__(self):
        import cupy as cp
        self.out = cp.empty(OUT_THREADS, dtype=cp.float32)
        self.k = loader.kernel(waves.FAMILY, "fixed_work")

    def launch(self, s: yourturn.Shape):
        self.k.launch(s.grid, s.block, (self.out, np.int32(waves.ITERS), np.float32(waves.A), np.float32(waves.B)),
                      smem=s.smem)

    def time(self, s: yourturn.Shape):
        return yourturn.graph_time(lambda: self.launch(s), LAUNCHES)

    def compare(self, s: yourturn.Shape):
        return None


TURN = yourturn.Turn(
    "01", waves.FAMILY, lambda s: "fixed_work", f"{waves.ITERS:,} dependent FMAs per thread, one float out",
    f"a CUDA graph of {LAUNCHES} launches", rules, Bench,
    points=tuple((g, b, m) for b in BLOCKS for m in SMEMS for g in GRIDS))

DOOR = TURN.door()
measure, data, recorded = DOOR.measure, DOOR.data, DOOR.recorded
