"""§7's your-turn launch: fma_tmp (kernels/fma_forms.cu: `tmp = a * b; out = tmp + c`, built with -fmad=true) over
2^20 elements at the grid and block the learner writes, its output compared byte for byte with numpy's single
rounding of a * b + c (floatbits.fma32: the FFMA the compiler made of it).

One thread per element, no grid-stride loop: a grid whose threads do not reach every element is refused before
the launch; a larger one is fine (the extra threads return). Any geometry that covers the elements leaves the
same bytes, which is what cmp shows and §7 asks you to prove rather than assume. Timed in a CUDA graph of 20
launches, hot L2 (12 MiB of inputs and output stay in the 60 MiB L2).
"""
from __future__ import annotations

import numpy as np

from launchlab.core import launch, loader, yourturn
from launchlab.kernels import fma_forms

N = 1 << 20
LAUNCHES = 20
BLOCKS = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def rules(s: yourturn.Shape) -> None:
    if s.grid[1:] != (1, 1) or s.block[1:] != (1, 1):
        raise launch.LaunchError(f"fma_tmp indexes blockIdx.x * blockDim.x + threadIdx.x: a 1-D grid and block, "
                                 f"got grid {s.grid}, block {s.block}")
    if s.smem:
        raise launch.LaunchError("fma_tmp uses no shared memory: leave smem at 0")
    if s.blocks * s.threads < N:
        raise launch.LaunchError(
            f"grid {s.blocks} x block {s.threads} = {s.blocks * s.threads:,} threads, one element each, leave "
            f"{N - s.blocks * s.threads:,} of the {N:,} elements unwritten: at block {s.threads} the grid needs at "
            f"least ceil({N:,} / {s.threads}) = {-(-N // s.threads):,} blocks")


class Bench:  # pragma: no mutate block (live only)
    def __init__(self):
        import cupy as cp
        self.cp = cp
        a, b, c = fma_forms.inputs(N)
        self.ref = fma_forms.fused(a, b, c)
        self.a, self.b, self.c = (cp.asarray(v) for v in (a, b, c))
        self.out = cp.empty(N, dtype=cp.float32)
        self.k = loader.kernel("fma_forms", "fma_tmp")

    def launch(self, s: yourturn.Shape):
        self.k.launch(s.grid, s.block, (self.a, self.b, self.c, self.out, np.int32(N)))

    def time(self, s: yourturn.Shape):
        return yourturn.graph_time(lambda: self.launch(s), LAUNCHES)

    def compare(self, s: yourturn.Shape):
        self.out.fill(np.nan)
        self.launch(s)
        same, diff = yourturn.identical(self.cp.asnumpy(self.out), self.ref)
        return yourturn.Compare("numpy's single rounding of a * b + c (fma32)", same, diff, N)


TURN = yourturn.Turn(
    "07", "fma_forms", lambda s: "fma_tmp", f"out = a * b + c over {N:,} floats, one thread each",
    f"a CUDA graph of {LAUNCHES} launches", rules, Bench,
    points=tuple((g, b, 0) for b in BLOCKS for g in sorted({-(-N // b), -(-N // b) + 1, 2 * -(-N // b)})))

DOOR = TURN.door()
measure, data, recorded = DOOR.measure, DOOR.data, DOOR.recorded
