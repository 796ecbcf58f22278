"""kernels/rms_norm.cu's host side: one block per row, 128 scalar threads or a block sized to the width.

    original           rms_norm_f32, 128 threads, scalar                     (LAUNCHLAB_RMS_WIDE=0)
    wide               rms_norm_wide<VEC>, block sized to the width          (LAUNCHLAB_RMS_WIDE=1, default)
    wide + reduce      rms_norm_wide_reduce<VEC>, all threads add to ss      (LAUNCHLAB_RMS_REDUCE=wide)

`plan` gives the geometry (float4 only where n % 4 == 0 and every pointer is 16-byte aligned), `rms_norm`
validates and launches, `reference` and the bit-exact emulations of the 128-thread reduction (`thread_sums`,
`emulate_ss`) are numpy, `cupy_rms_norm` is the same norm in CuPy array operations, and `Bench` times one
width hot or cold. The §2 lesson is launchlab.sections.s02_width.rmsnorm.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from launchlab.core import floatbits, gates, hardware, launch, loader, mode, timing

FAMILY = "rms_norm"
REDUCE_THREADS = 128
NORMS_PER_TOKEN = 327
EPS = 1e-6


class RMSNormError(launch.LaunchError):
    pass


@dataclass(frozen=True)
class Plan:
    """What a launch will do, decided before it happens."""
    expr: str          # the kernel instantiation
    block: int
    vec: bool
    reduce_threads: int

    @property
    def bytes_in_flight(self) -> int:
        """The lecture's measure of bytes in flight: one load of x per thread, threads x (16 B with float4,
        4 B scalar). True only when each thread has one load outstanding -- the `_chain` twins; ptxas unrolls
        the others (sass.loop_bodies counts the loads a loop trip really issues)."""
        return self.block * (16 if self.vec else 4)


def validate(x, w, y, n: int, eps: float) -> int:
    """Refuse bad inputs before any launch. Returns the number of rows."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise RMSNormError(f"row width n must be a positive integer, got {n!r}")
    if not np.isfinite(eps) or eps < 0:
        raise RMSNormError(f"eps must be a finite number >= 0, got {eps!r}")
    for name, a in (("x", x), ("w", w), ("y", y)):
        if a.dtype != np.float32:
            raise RMSNormError(f"{name} must be float32, got {a.dtype}")
        if not a.flags.c_contiguous:
            raise RMSNormError(f"{name} must be contiguous (a strided view such as x[::2] is not): pass a "
                               f"contiguous copy, e.g. cupy.ascontiguousarray({name})")
    if w.size != n:
        raise RMSNormError(f"weight has {w.size} elements, the row has {n}")
    if x.size == 0 or x.size % n:
        raise RMSNormError(f"x has {x.size} elements, not a whole number of rows of {n}")
    if y.size != x.size:
        raise RMSNormError(f"y has {y.size} elements, x has {x.size}")
    return x.size // n


def plan(n: int, aligned: bool = True, block: int | None = None, wide: bool | None = None,
         reduce: str | None = None, unroll: str | None = None) -> Plan:
    """Pick the kernel and block for a row of width n, from the shape alone (as llama.cpp's norm launchers
    do): the gates (or the arguments) choose the arm; `aligned` says whether x, w and y all start on a
    16-byte boundary, and float4 is used only then and when n % 4 == 0. `unroll="1"` picks the twin with
    `#pragma unroll 1` on the narrow loops (one load of x in flight per thread). No arrays are needed to ask."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise RMSNormError(f"row width n must be a positive integer, got {n!r}")
    wide = (gates.value("RMS_WIDE") == "1") if wide is None else wide
    reduce = gates.value("RMS_REDUCE") if reduce is None else reduce
    unroll = gates.value("RMS_UNROLL") if unroll is None else unroll
    if unroll not in ("auto", "1"):
        raise RMSNormError(f"unroll must be 'auto' (ptxas decides) or '1' (one load in flight), got {unroll!r}")
    chain = "_chain" if unroll == "1" else ""
    if not wide:
        if block not in (None, REDUCE_THREADS):
            raise RMSNormError("the original kernel runs on exactly 128 threads")
        return Plan(f"rms_norm_f32{chain}", REDUCE_THREADS, False, REDUCE_THREADS)
    vec = n % 4 == 0 and bool(aligned)
    if block is None:
        units = n // 4 if vec else n
        block = min(1024, max(REDUCE_THREADS, -(-units // 32) * 32))
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)):
        raise RMSNormError(f"block must be a whole number of threads, got {block!r}")
    if block < REDUCE_THREADS or block > 1024 or block % 32:
        raise RMSNormError(f"the widened kernel needs a block of 128 to 1024 threads in whole warps "
                           f"(the reduction runs on threads 0..127), got {block}")
    if reduce == "wide":
        if chain:
            raise RMSNormError("LAUNCHLAB_RMS_UNROLL=1 exists for the narrow reduction only: the widened "
                               "reduction's stride is blockDim.x, which ptxas does not unroll anyway")
        return Plan(f"rms_norm_wide_reduce<{'true' if vec else 'false'}>", block, vec, block)
    if block == REDUCE_THREADS and not vec:
        return Plan(f"rms_norm_f32{chain}", REDUCE_THREADS, False, REDUCE_THREADS)   # stays on the original
    return Plan(f"rms_norm_wide{chain}<{'true' if vec else 'false'}>", block, vec, REDUCE_THREADS)


def rms_norm(x, w, y=None, eps: float = EPS, n: int | None = None, block: int | None = None,
             wide: bool | None = None, reduce: str | None = None, stats=None, unroll: str | None = None,
             stamps=None, pdl: bool | None = None):
    """Launch the RMS norm on CuPy arrays (one block per row). Returns (y, plan). `stamps`: three uint64
    slots for block 0's %globaltimer readings (entered, past the wait, finished; launchlab.sections.s06_one_binary.pdlchain). `pdl`:
    force this launch on (True) or off (False) the programmatic-dependent-launch attribute (loader.Kernel)."""
    mode.require_live("launching the RMS norm")
    import cupy as cp

    n = int(w.size) if n is None else n
    if y is None:
        y = cp.empty_like(x)
    rows = validate(x, w, y, n, eps)
    p = plan(n, launch.aligned16(x, w, y), block, wide, reduce, unroll)
    if stats is not None and (stats.dtype != np.float32 or stats.size < 2 * rows):
        raise RMSNormError(f"stats needs {2 * rows} float32 slots")
    if stamps is not None and (stamps.dtype != np.uint64 or stamps.size < 3):
        raise RMSNormError("stamps needs 3 uint64 slots")
    k = loader.kernel(FAMILY, p.expr)
    k.launch(rows, p.block, (x, w, y, np.int32(n), np.float32(eps), stats if stats is not None else np.uint64(0),
                             stamps if stamps is not None else np.uint64(0)), pdl=pdl)
    return y, p


# ------------------------------------------------------------------ references
def reference(x: np.ndarray, w: np.ndarray, eps: float = EPS) -> np.ndarray:
    """float64 reference, row by row."""
    x64 = np.asarray(x, np.float64)
    n = w.size
    x64 = x64.reshape(-1, n)
    inv = 1.0 / np.sqrt((x64 * x64).sum(axis=1) / n + eps)
    return (x64 * inv[:, None] * np.asarray(w, np.float64)).reshape(np.shape(x))


def thread_sums(x: np.ndarray, n: int, threads: int = REDUCE_THREADS) -> np.ndarray:
    """Each of `threads` threads runs acc = fma(x[d], x[d], acc) over d = t, t + threads, ... (nvcc contracts
    `acc += x*x` to FFMA), bit-exact. Returns (rows, threads) float32."""
    x = np.asarray(x, np.float32).reshape(-1, n)
    rows = x.shape[0]
    steps = -(-n // threads)
    pad = np.zeros((rows, steps * threads), np.float32)
    pad[:, :n] = x
    acc = np.zeros((rows, threads), np.float32)
    for j in range(steps):
        v = pad[:, j * threads:(j + 1) * threads]
        live = (np.arange(threads) + j * threads) < n
        acc = np.where(live, floatbits.fma32(v, v, acc), acc)   # threads past the end do not add (not even +0.0)
    return acc


def emulate_ss(x: np.ndarray, n: int, threads: int = REDUCE_THREADS) -> np.ndarray:
    """Bit-exact float32 emulation of ss: the per-thread strided FMA sums, then common.cuh's block_sum."""
    return floatbits.block_sum(thread_sums(x, n, threads))


def rsqrt_arg(ss: np.ndarray, n: int, eps: float = EPS) -> np.ndarray:
    """The float32 value rsqrtf receives: ss / n + eps (IEEE division, then add)."""
    return (np.asarray(ss, np.float32) / np.float32(n)) + np.float32(eps)


def apply(x: np.ndarray, w: np.ndarray, inv: np.ndarray) -> np.ndarray:
    """The kernel's apply, bit-exact given inv: (x * inv) * w in float32, per element."""
    n = w.size
    xr = np.asarray(x, np.float32).reshape(-1, n)
    return ((xr * np.asarray(inv, np.float32)[:, None]) * np.asarray(w, np.float32)).reshape(np.shape(x))


def row(seed: int, n: int, r: int) -> np.ndarray:
    """Row r of the course's random inputs at width n: standard normal float32, reproducible anywhere."""
    return np.random.default_rng([seed, n, r]).standard_normal(n, dtype=np.float32)


def weight(n: int) -> np.ndarray:
    return (1.0 + 0.1 * np.random.default_rng([7, n]).standard_normal(n)).astype(np.float32)


def cpu_workers() -> int:
    """Threads for the CPU side's row-wise NumPy work (NumPy releases the GIL in its array loops)."""
    return max(2, min(16, os.cpu_count() or 2))


def row_chunks(count: int, parts: int) -> list[tuple[int, int]]:
    """[lo, hi) bounds splitting `count` rows into `parts` nearly equal runs (none empty)."""
    parts = max(1, min(parts, count))
    b = [count * i // parts for i in range(parts + 1)]
    return list(zip(b[:-1], b[1:]))


def rows(seed: int, n: int, count: int, start: int = 0) -> np.ndarray:
    """Rows start .. start + count - 1 (each its own generator, so any subset is reproducible alone); many rows
    are drawn by several threads at once (NumPy releases the GIL while it fills), the same bytes either way."""
    if count < 1024:
        return np.stack([row(seed, n, r) for r in range(start, start + count)])
    out = np.empty((count, n), np.float32)

    def fill(lo: int, hi: int) -> None:
        for r in range(lo, hi):
            out[r] = row(seed, n, start + r)
    with ThreadPoolExecutor(cpu_workers()) as pool:
        list(pool.map(lambda b: fill(*b), row_chunks(count, cpu_workers())))
    return out


class Bench:
    """One row at width n on the GPU, timed as the lecture does: 327 launches in one CUDA graph. With
    cold=True it also keeps enough copies of x, w and y that a graph cycling through them finds each copy
    outside the L2 (timing.copies_for)."""

    def __init__(self, n: int, seed: int = 3, cold: bool = False):
        mode.require_live("timing the RMS norm")
        import cupy as cp
        self.cp, self.n = cp, n
        self.x = cp.asarray(row(seed, n, 0))
        self.w = cp.asarray(weight(n))
        self.y = cp.empty_like(self.x)
        self.sq = cp.empty_like(self.x)
        self.s = cp.empty((), dtype=cp.float32)
        self.copies: list[tuple] = []
        if cold:
            k = timing.copies_for(3 * self.x.nbytes, hardware.from_device().l2_bytes)
            self.copies = [(self.x.copy(), self.w.copy(), cp.empty_like(self.x)) for _ in range(k)]

    def run(self, arm: str, block: int | None = None, unroll: str = "auto", copy: int | None = None):
        x, w, y = (self.x, self.w, self.y) if copy is None else self.copies[copy]
        if arm == "cupy":
            return cupy_rms_norm(x, w, EPS, y, self.sq, self.s)
        return rms_norm(x, w, y, EPS, self.n, block=block, wide=(arm == "wide"), reduce="narrow", unroll=unroll)

    def time(self, arm: str, block: int | None = None, reps: int = 10, launches: int = NORMS_PER_TOKEN,
             unroll: str = "auto"):
        """Per launch in a CUDA graph of `launches` norms of one row: hot L2."""
        return timing.graph(lambda: self.run(arm, block, unroll), launches=launches, reps=reps,
                            label=f"{arm} n={self.n} block={block} unroll={unroll} hot")

    def time_cold(self, arm: str, block: int | None = None, reps: int = 10, unroll: str = "auto"):
        """Per launch in a CUDA graph cycling through the copies: cold L2."""
        if not self.copies:
            raise RMSNormError("this Bench was built without cold=True: it has no copies to rotate")
        fns = [lambda i=i: self.run(arm, block, unroll, copy=i) for i in range(len(self.copies))]
        return timing.graph_cold(fns, reps=reps, label=f"{arm} n={self.n} block={block} unroll={unroll} cold")


# ------------------------------------------------------------------ live measurements (the recorder's)
def cupy_rms_norm(x, w, eps, out, sq, s):
    """What a user would write with CuPy array operations (outputs preallocated so it can sit in a graph):
    square, sum, divide, add eps, sqrt, reciprocal, scale, weight -- eight kernels per norm."""
    import cupy as cp
    n = w.size
    cp.multiply(x, x, out=sq)
    cp.sum(sq, out=s)
    cp.divide(s, np.float32(n), out=s)
    cp.add(s, np.float32(eps), out=s)
    cp.sqrt(s, out=s)
    cp.reciprocal(s, out=s)
    cp.multiply(x, s, out=out)
    cp.multiply(out, w, out=out)
    return out
