"""§7's your-turn launch: fma_tmp (kernels/fma_forms.cu: `tmp = a * b; out = tmp + c`, built with -fmad=true) over
2^20 elements at the grid and block the learner writes, its output compared byte for byte with numpy's single
rounding of a * b + c (floatbits.fma32: the FFMA the compiler made of it).

One thread per element, no grid-stride loop, and the kernel's `if (i < n)` guard: a larger grid is fine (the
extra threads return), and a grid too short for the elements runs too -- safely, the guard keeps every thread
inside the arrays -- and leaves the tail unwritten. The output is filled with NaN before each compared launch,
so cmp counts exactly the elements no thread reached: §7's point, that cmp catches what a glance at a few
values would not. Any geometry that covers the elements leaves the same bytes. Timed in a CUDA graph of 20
launches, hot L2 (12 MiB of inputs and output stay in the 60 MiB L2). Recorded at each block: the covering
grid, one more block, twice it, and one block short.
"""
from __future__ import annotations

import numpy as np

from launchlab.core import launch, loader, yourturn
from launchlab.kernels import fma_forms

N = 1 << 20
LAUNCHES = 20
BLOCKS = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
AGAINST = "numpy's single rounding of a * b + c (fma32)"


def rules(s: yourturn.Shape) -> None:
    if s.grid[1:] != (1, 1) or s.block[1:] != (1, 1):
        raise launch.LaunchError(f"fma_tmp indexes blockIdx.x * blockDim.x + threadIdx.x: a 1-D grid and block, "
                                 f"got grid {s.grid}, block {s.block}")
    if s.smem:
        raise launch.LaunchError("fma_tmp uses no shared memory: leave smem at 0")
    # a grid short of the elements is not refused: the guarded kernel runs it safely and cmp finds the tail


def unreached(s: yourturn.Shape) -> int:
    """The elements no thread of this launch writes (one thread each, the rest guarded off)."""
    return max(0, N - s.blocks * s.threads)


def on_cpu(s: yourturn.Shape) -> yourturn.Compare:
    """Replay, a geometry the H200 did not record: what the guarded kernel leaves, computed on the CPU by its
    numpy reference -- fma32 where a thread reaches the element, the NaN the output was filled with elsewhere --
    compared byte for byte with fma32 over every element, as the live cmp is."""
    a, b, c = fma_forms.inputs(N)
    ref = fma_forms.fused(a, b, c)
    out = np.full(N, np.nan, np.float32)
    reached = min(N, s.blocks * s.threads)
    out[:reached] = ref[:reached]
    same, diff = yourturn.identical(out, ref)
    return yourturn.Compare(f"{AGAINST} -- computed on the CPU by the kernel's numpy reference, not recorded",
                            same, diff, N)


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
        return yourturn.Compare(AGAINST, same, diff, N)


TURN = yourturn.Turn(
    "07", "fma_forms", lambda s: "fma_tmp", f"out = a * b + c over {N:,} floats, one thread each",
    f"a CUDA graph of {LAUNCHES} launches", rules, Bench, on_cpu=on_cpu,
    points=tuple((g, b, 0) for b in BLOCKS
                 for g in sorted({-(-N // b) - 1, -(-N // b), -(-N // b) + 1, 2 * -(-N // b)})))

DOOR = TURN.door()
measure, data, recorded = DOOR.measure, DOOR.data, DOOR.recorded
