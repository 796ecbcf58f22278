"""kernels/stream_read.cu's host side: a grid-stride read of a float32 buffer, each block summing its share.

The variant (floats per load, loads in flight) is chosen by LAUNCHLAB_STREAM_VEC / _UNROLL; `check_view`
refuses a view float4 loads cannot read; `reference_partials` is the numpy per-block sum; `StreamRead` holds
the buffer on the GPU, launches any grid and block, and times it. The §1 lesson is
launchlab.sections.s01_arithmetic.bandwidth.
"""
from __future__ import annotations

import numpy as np

from launchlab.core import gates, hardware, launch, loader, mode, timing
from launchlab.core import timeline as timeline_mod

FAMILY = "stream_read"
BUFFER_BYTES = 1 << 30                        # 1 GiB: 17x the H200's 60 MiB L2
MAX_GRID = 65536
STATIC_SMEM = 128                             # the kernel's 32-float shm for block_sum
VARIANTS = ((4, 4), (1, 1), (4, 1), (1, 4))   # (floats per load, loads in flight): default first


def expr(vec: int, unroll: int) -> str:
    return f"stream_read<{vec}, {unroll}>"


def variant() -> tuple[int, int]:
    """(floats per load, loads in flight per thread) chosen by LAUNCHLAB_STREAM_VEC / _UNROLL now."""
    return int(gates.value("STREAM_VEC")), int(gates.value("STREAM_UNROLL"))


def check_view(x, vec: int) -> None:
    """float4 loads need a 16-byte aligned pointer and a length divisible by 4: refuse otherwise."""
    if x.dtype != np.float32:
        raise launch.LaunchError(f"the streaming read takes float32, got {x.dtype}")
    if x.ndim != 1 or (hasattr(x, "flags") and not x.flags.c_contiguous):
        raise launch.LaunchError("the streaming read takes a contiguous 1-D array")
    if x.size == 0:
        raise launch.LaunchError("the streaming read needs a non-empty array")
    if vec == 4:
        if not launch.aligned16(x):
            raise launch.LaunchError(f"misaligned view: float4 loads need a 16-byte aligned pointer, this one "
                                     f"is {launch.address(x) % 16} bytes past a 16-byte boundary "
                                     f"(use LAUNCHLAB_STREAM_VEC=1 or an aligned slice)")
        if x.size % 4:
            raise launch.LaunchError(f"float4 loads need a length divisible by 4, got {x.size} floats "
                                     f"(use LAUNCHLAB_STREAM_VEC=1)")


def reference_partials(x: np.ndarray, grid: int, block: int, vec: int) -> np.ndarray:
    """numpy reference: the sum each block owns under the grid-stride loop (float64)."""
    xv = np.asarray(x, dtype=np.float64).reshape(-1, vec).sum(axis=1)
    stride = grid * block
    pad = (-xv.size) % stride
    xv = np.concatenate([xv, np.zeros(pad)])
    return xv.reshape(-1, grid, block).sum(axis=(0, 2))


def tb_per_s(nbytes: int, us: float) -> float:
    return nbytes / (us * 1e-6) / 1e12


class StreamRead:
    """The §1 streaming read on a live GPU: one buffer, one build, any grid and block."""

    def __init__(self, nbytes: int = BUFFER_BYTES, seed: int = 0):
        mode.require_live("the streaming read")
        import cupy as cp

        self.cp = cp
        n = nbytes // 4
        self.x = cp.random.default_rng(seed).random(n, dtype=cp.float32)
        self.partial = cp.empty(MAX_GRID, dtype=cp.float32)
        self.spec = hardware.from_device()

    @property
    def nbytes(self) -> int:
        return self.x.nbytes

    def launch(self, grid: int, block: int, x=None, vec: int | None = None, unroll: int | None = None,
               timeline: bool | None = None):
        """One launch. timeline=True (or LAUNCHLAB_TIMELINE=1) runs the twin that stamps each block's SM and
        lifetime; it exists for float4 x 4 only, and needs timeline.capture() around it."""
        v, u = variant()
        vec, unroll = vec or v, unroll or u
        x = self.x if x is None else x
        check_view(x, vec)
        if grid > MAX_GRID:
            raise launch.LaunchError(f"grid {grid} exceeds this experiment's partial buffer ({MAX_GRID})")
        name = expr(vec, unroll)
        if timeline_mod.stamped(FAMILY, timeline):
            if (vec, unroll) != (4, 4):
                raise launch.LaunchError(f"the block-timeline twin is built for stream_read<4, 4> only, not {name}")
            name = "stream_read_timeline<4, 4>"
        k = loader.kernel(FAMILY, name)
        k.launch(grid, block, (x, np.int64(x.size // vec), self.partial), spec=self.spec)
        return k

    def check_reference(self, grid: int, block: int, vec: int, unroll: int, n: int = 1 << 20) -> float:
        """Run on a small buffer and return the max relative error of the per-block sums vs numpy."""
        xs = self.x[:n]
        self.partial[:grid] = np.nan
        self.launch(grid, block, xs, vec, unroll)
        got = self.cp.asnumpy(self.partial[:grid]).astype(np.float64)
        ref = reference_partials(self.cp.asnumpy(xs), grid, block, vec)
        return float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)))

    def time(self, grid: int, block: int, reps: int = 7, vec=None, unroll=None, budget_s: float = 0.6
             ) -> timing.Timing:
        """Events around each launch; slow points (tiny grids) get fewer reps, never fewer than 3. The probe that
        sizes the reps (one warm-up launch, then one timed the same way as the rest) is their warm-up and their
        first rep: at a grid of 1 each launch reads the whole buffer with one block, so timing it again, or
        warming up again, would cost a rep's time for nothing."""
        first = timing.events(lambda: self.launch(grid, block, vec=vec, unroll=unroll), reps=1, warmup=1)
        n = int(max(3, min(reps, budget_s / max(first.median * 1e-6, 1e-9))))
        rest = timing.events(lambda: self.launch(grid, block, vec=vec, unroll=unroll), reps=n - 1, warmup=0)
        return timing.Timing(first.reps_us + rest.reps_us, rest.method, 1, rest.label, rest.shared)

    def copy_ceiling(self, reps: int = 20) -> timing.Timing:
        """Device-to-device copy of the buffer (cudaMemcpyAsync): the practical ceiling, bytes read+written."""
        cp = self.cp
        dst = cp.empty_like(self.x)
        stream = cp.cuda.get_current_stream()

        def copy():
            cp.cuda.runtime.memcpyAsync(dst.data.ptr, self.x.data.ptr, self.x.nbytes, 3, stream.ptr)
        return timing.events(copy, reps=reps, warmup=3, label="cudaMemcpy D2D")
