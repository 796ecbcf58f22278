"""§2: RMS norm, one block per row -- 128 scalar threads vs a block sized to the width.

The reduction (sum of squares) decides the float32 association of ss, and through inv = rsqrtf(ss/n + eps)
every output element. The widened kernel keeps the reduction on exactly 128 threads with the original stride
and widens only the elementwise apply, so its output is byte-identical. Widening the reduction too is an
accuracy change: ss is summed in another order.

    original           rms_norm_f32, 128 threads, scalar                     (LAUNCHLAB_RMS_WIDE=0)
    wide               rms_norm_wide<VEC>, block sized to the width          (LAUNCHLAB_RMS_WIDE=1, default)
    wide + reduce      rms_norm_wide_reduce<VEC>, all threads add to ss      (LAUNCHLAB_RMS_REDUCE=wide)

VEC (float4) is used only when n % 4 == 0 and x, w and y are all 16-byte aligned; otherwise the exact scalar
path runs. A wide launch that comes out at 128 threads with no float4 path stays on the original kernel.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from . import floatbits, gates, hardware, kernels, launch, mode, recordings, timing
from .door import Door
from .progress import Progress
from .recordings import RECORDED

FAMILY = "rms_norm"
REDUCE_THREADS = 128
WIDTHS = (2048, 4096, 5120, 7168, 8192)       # hidden sizes of real models (7168: the lecture's)
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
        the others (kernels.loop_bodies counts the loads a loop trip really issues)."""
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
    slots for block 0's %globaltimer readings (entered, past the wait, finished; launchlab.pdlchain). `pdl`:
    force this launch on (True) or off (False) the programmatic-dependent-launch attribute (kernels.Kernel)."""
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
    k = kernels.kernel(FAMILY, p.expr)
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


@dataclass
class InFlightArm:
    """One arm of the loads-in-flight experiment at one width: its plan, the loads one trip of each of its
    loops issues (from the SASS of the recording machine's compile), and its times cold and hot."""
    arm: str                   # original | wide
    unroll: str                # auto (ptxas decides) | 1 (#pragma unroll 1)
    expr: str
    block: int
    loop_loads: list[int]      # LDG per trip, loop by loop in address order ([] if no SASS tool was there)
    cold: timing.Timing
    hot: timing.Timing


@dataclass
class InFlight:
    """§2's premise tested: does the 128-thread kernel really have one load in flight per thread?"""
    n: int
    sass_from: str             # which compiler's SASS loop_loads come from
    arms: list[InFlightArm]

    def arm(self, arm: str, unroll: str) -> InFlightArm:
        return next(a for a in self.arms if (a.arm, a.unroll) == (arm, unroll))


def loop_loads(expr: str) -> tuple[list[int], str]:
    """LDG instructions per trip of each loop of one rms_norm kernel, from the SASS of this machine's NVRTC
    (offline compile, cuobjdump). ([], why) when no SASS tool is installed."""
    try:
        b = kernels.compile_offline(FAMILY)
        return ([lp.global_loads for lp in kernels.loop_bodies(b.sass(expr))],
                f"NVRTC {b.nvrtc_version[0]}.{b.nvrtc_version[1]}, sm_90")
    except kernels.KernelError as e:
        return [], f"no SASS: {e}"


def in_flight(n: int = 7168, reps: int = 20) -> InFlight:
    b = Bench(n, cold=True)
    arms, how = [], ""
    for arm in ("original", "wide"):
        for unroll in ("auto", "1"):
            p = plan(n, True, wide=(arm == "wide"), reduce="narrow", unroll=unroll)
            loads, how = loop_loads(p.expr)
            arms.append(InFlightArm(arm, unroll, p.expr, p.block, loads,
                                    b.time_cold(arm, reps=reps, unroll=unroll), b.time(arm, reps=reps, unroll=unroll)))
    return InFlight(n, how, arms)


@dataclass
class Identity:
    """Original vs widened apply vs widened reduction over `rows` random rows of width n, on the GPU: byte
    comparisons, the reduction's effect on ss / inv / the output, and the CPU emulation checked against the
    GPU's bits. ss_bits / inv_bits keep the first rows' bits so replay can re-run the emulation against them."""
    n: int
    rows: int
    seed: int
    plans: dict[str, Plan]
    wide_identical: bool
    ss_wide_identical: bool
    reduce_ss_rows_changed: int
    reduce_inv_rows_changed: int
    reduce_out_rows_changed: int
    reduce_out_elements_changed: int
    reduce_out_max_rel_change: float
    reduce_ss_max_ulps: int
    max_rel_err_vs_float64: dict[str, float]
    chain_identical: bool
    emulation_ss_matches_gpu: dict[str, int]
    apply_emulation_matches_gpu: bool
    ss_bits: dict[str, list[int]]
    inv_bits: dict[str, list[int]]

    def plan(self, arm: str) -> Plan:
        """The plan of one arm: 'original', 'wide' or 'wide_reduce'."""
        return self.plans[arm]

    def gpu_ss_bits(self, arm: str = "original") -> np.ndarray:
        """The GPU's ss bits of the first rows, arm 'original' or 'wide_reduce'."""
        return np.array(self.ss_bits[arm], dtype=np.uint32)

    def ss_rows_emulated(self, reduction: str) -> int:
        """Rows whose GPU ss the numpy emulation reproduced bit for bit ('narrow' or 'wide' reduction)."""
        return self.emulation_ss_matches_gpu[reduction]


@dataclass
class Fallback:
    """One case of the fast path failing into exactness: a misaligned view or a width not divisible by 4."""
    n: int
    offset_floats: int
    expr: str
    vec: bool
    block: int
    identical: bool


@dataclass
class WidthTiming:
    """Per-launch times at one width, 327 launches per CUDA graph (hot L2: one row, replayed)."""
    n: int
    original: timing.Timing
    wide: timing.Timing
    wide_plan_block: int
    wide_blocks: dict[int, timing.Timing]
    cupy: timing.Timing
    cupy_instrument: str


@dataclass
class RMSData:
    """§2's result."""
    widths: list[int]
    norms_per_token: int
    eps: float
    identity: list[Identity]
    fallback: list[Fallback]
    timing: list[WidthTiming]
    abba_7168: timing.ABBA
    in_flight: InFlight
    source: str = field(default="", metadata={RECORDED: False})

    def times(self, n: int) -> WidthTiming:
        return next(t for t in self.timing if t.n == n)

    def identity_at(self, n: int) -> Identity:
        return next(x for x in self.identity if x.n == n)

    @property
    def abba(self) -> timing.ABBA:
        return self.abba_7168

    @property
    def blocks(self) -> list[int]:
        """The widened apply's block sizes that were timed."""
        return sorted(self.timing[0].wide_blocks)


def compare_rows(n: int, count: int, seed: int = 11, keep: int = 512) -> Identity:
    """On the GPU: original vs widened apply vs widened reduction over `count` random rows of width n.
    Byte comparisons of the outputs; ss/inv bits kept for the first `keep` rows (for the CPU emulation)."""
    mode.require_live("comparing RMS norm outputs on the GPU")
    import cupy as cp
    xs = rows(seed, n, count)
    w = weight(n)
    x = cp.asarray(xs)
    wd = cp.asarray(w)
    outs, stats, plans = {}, {}, {}
    for arm, kw in (("original", dict(wide=False, unroll="auto")), ("wide", dict(wide=True, reduce="narrow", unroll="auto")),
                    ("wide_reduce", dict(wide=True, reduce="wide", unroll="auto")),
                    ("original_chain", dict(wide=False, unroll="1")),
                    ("wide_chain", dict(wide=True, reduce="narrow", unroll="1"))):
        y = cp.full(x.shape, np.nan, dtype=cp.float32)
        st = cp.full(2 * count, np.nan, dtype=cp.float32)
        _, p = rms_norm(x, wd, y, EPS, n, stats=st, **kw)
        outs[arm], stats[arm], plans[arm] = cp.asnumpy(y), cp.asnumpy(st).reshape(count, 2), p
    ss_o, ss_r = stats["original"][:, 0], stats["wide_reduce"][:, 0]
    counts = identity_counts(xs, w, outs, stats, plans["wide_reduce"].reduce_threads)
    return recordings.decode(Identity, {
        "n": n, "rows": count, "seed": seed,
        "plans": {k: recordings.encode(p) for k, p in plans.items()},
        **counts,
        "chain_identical": (counts["chain_identical"]
                            and stats["original"].tobytes() == stats["original_chain"].tobytes()),
        "ss_wide_identical": bool(stats["original"].tobytes() == stats["wide"].tobytes()),
        "reduce_ss_rows_changed": int(np.sum(floatbits.bits(ss_o) != floatbits.bits(ss_r))),
        "reduce_inv_rows_changed": int(np.sum(floatbits.bits(stats["original"][:, 1])
                                              != floatbits.bits(stats["wide_reduce"][:, 1]))),
        "reduce_ss_max_ulps": int(floatbits.ulp_distance(ss_o, ss_r).max()),
        "ss_bits": {"original": floatbits.bits(ss_o[:keep]).tolist(),
                    "wide_reduce": floatbits.bits(ss_r[:keep]).tolist()},
        "inv_bits": {"original": floatbits.bits(stats["original"][:keep, 1]).tolist(),
                     "wide_reduce": floatbits.bits(stats["wide_reduce"][:keep, 1]).tolist()},
    })


def _identity_part(xs, w, outs: dict, stats: dict, wide_threads: int, a: int, b: int) -> dict:
    """identity_counts over rows a .. b-1."""
    bits = floatbits.bits
    n = w.size
    o, wr = outs["original"][a:b], outs["wide_reduce"][a:b]
    ref = reference(xs[a:b], w)
    mag = np.maximum(np.abs(ref), 1e-30)
    ob = bits(o)
    diff = ob != bits(wr)
    o64 = o.astype(np.float64)
    return {
        "wide_identical": np.array_equal(ob, bits(outs["wide"][a:b])),
        "chain_identical": (np.array_equal(ob, bits(outs["original_chain"][a:b]))
                            and np.array_equal(ob, bits(outs["wide_chain"][a:b]))),
        "out_rows": int(np.sum(np.any(diff, axis=1))), "out_elems": int(np.sum(diff)),
        "rel": float((np.abs(o64 - wr) / np.maximum(np.abs(o64), 1e-30)).max()),
        "err": {k: float(np.max(np.abs(v[a:b] - ref) / mag)) for k, v in outs.items()},
        "narrow": int(np.sum(bits(emulate_ss(xs[a:b], n, REDUCE_THREADS)) == bits(stats["original"][a:b, 0]))),
        "wide": int(np.sum(bits(emulate_ss(xs[a:b], n, wide_threads)) == bits(stats["wide_reduce"][a:b, 0]))),
        "apply": np.array_equal(bits(apply(xs[a:b], w, stats["original"][a:b, 1])), ob),
    }


def identity_counts(xs, w, outs: dict, stats: dict, wide_threads: int, workers: int | None = None) -> dict:
    """compare_rows' CPU side: the GPU's outputs of every arm (`outs`, rows x n; `stats`, rows x (ss, inv))
    against each other, against a float64 reference, and ss / the apply against their bit-exact emulations.
    It is most of compare_rows' time and all of it is row by row, so runs of rows are done side by side (NumPy
    releases the GIL in its array loops), each reduced to counts and maxima that combine exactly: the same
    numbers as one pass over all rows."""
    workers = workers or cpu_workers()
    with ThreadPoolExecutor(workers) as pool:
        parts = list(pool.map(lambda ab: _identity_part(xs, w, outs, stats, wide_threads, *ab),
                              row_chunks(len(xs), 2 * workers)))
    most = lambda vals: float(np.max(np.asarray(vals, dtype=np.float64)))   # noqa: E731 - NaN stays NaN
    return {
        "wide_identical": all(q["wide_identical"] for q in parts),
        "chain_identical": all(q["chain_identical"] for q in parts),
        "reduce_out_rows_changed": sum(q["out_rows"] for q in parts),
        "reduce_out_elements_changed": sum(q["out_elems"] for q in parts),
        "reduce_out_max_rel_change": most([q["rel"] for q in parts]),
        "max_rel_err_vs_float64": {k: most([q["err"][k] for q in parts]) for k in outs},
        "emulation_ss_matches_gpu": {"narrow": sum(q["narrow"] for q in parts),
                                     "wide": sum(q["wide"] for q in parts)},
        "apply_emulation_matches_gpu": all(q["apply"] for q in parts),
    }


def fallback_checks(count: int = 64, seed: int = 5) -> list[Fallback]:
    """The fast path fails into exactness: misaligned views and widths not divisible by 4 take the scalar
    widened path, and their bytes equal the original's."""
    mode.require_live("the fallback checks")
    import cupy as cp
    out = []
    for n, offset in ((7168, 1), (7166, 0), (5118, 0), (4096, 3), (7168, 0)):
        xs = rows(seed, n, count)
        buf = cp.zeros(xs.size + 8, dtype=cp.float32)
        x = buf[offset:offset + xs.size]
        x[...] = cp.asarray(xs.ravel())
        w = cp.asarray(weight(n))
        ybuf = cp.zeros(xs.size + 8, dtype=cp.float32)
        y_wide = ybuf[offset:offset + xs.size]
        y_orig = cp.empty(xs.size, dtype=cp.float32)
        _, p = rms_norm(x, w, y_wide, EPS, n, wide=True, reduce="narrow")
        rms_norm(x, w, y_orig, EPS, n, wide=False)
        out.append(Fallback(n, offset, p.expr, p.vec, p.block,
                            bool(cp.asnumpy(y_wide).tobytes() == cp.asnumpy(y_orig).tobytes())))
    return out


def identity_facts(xs: np.ndarray, n: int, block: int = 1024) -> dict:
    """The two facts behind the widened apply's byte-identity, checked on data with the emulation:
    1. threads 128..block-1 contribute +0.0 and v + 0.0 == v in IEEE arithmetic (bit for bit, v >= 0);
    2. so the warp sums entering the cross-warp step are the same four values followed by +0.0 lanes, in the
       128-thread block (lanes past its 4 warps are 0) and the wide block (warps 4..31 summed to +0.0)."""
    acc = thread_sums(xs, n, REDUCE_THREADS)
    rows_ = acc.shape[0]
    wide = np.zeros((rows_, block), np.float32)
    wide[:, :REDUCE_THREADS] = acc
    narrow_warps = floatbits.xor_tree(acc.reshape(rows_, REDUCE_THREADS // 32, 32))
    wide_warps = floatbits.xor_tree(wide.reshape(rows_, block // 32, 32))
    lanes_n = np.zeros((rows_, 32), np.float32)
    lanes_n[:, :REDUCE_THREADS // 32] = narrow_warps
    plus_zero = floatbits.bits(acc + np.float32(0.0)) == floatbits.bits(acc)
    return {
        "rows": rows_,
        "x_plus_zero_is_x": int(np.all(plus_zero, axis=1).sum()),
        "idle_warps_sum_to_plus_zero": int(np.all(floatbits.bits(wide_warps[:, REDUCE_THREADS // 32:]) == 0,
                                                  axis=1).sum()),
        "cross_warp_lanes_identical": int(np.all(floatbits.bits(wide_warps) == floatbits.bits(lanes_n[:, :block // 32]),
                                                 axis=1).sum()),
        "ss_identical": int(np.sum(floatbits.bits(floatbits.block_sum(acc)) == floatbits.bits(floatbits.block_sum(wide)))),
    }


# ------------------------------------------------------------------ the section's door
BLOCKS = (128, 256, 512, 1024)


def abba(b: "Bench", pairs: int = 3) -> timing.ABBA:
    """Original (A) vs widened apply (B), one build, interleaved A B | B A | A B, each rep a graph series."""
    return timing.abba(lambda: b.time("original", reps=5), lambda: b.time("wide", reps=5), pairs=pairs,
                       labels=("original 128 scalar", "widened apply"))


def time_width(n: int) -> WidthTiming:
    b = Bench(n)
    original, wide = b.time("original"), b.time("wide")
    blocks = {k: b.time("wide", k) for k in BLOCKS}
    try:
        cu, how = b.time("cupy"), "graph"
    except Exception as e:  # noqa: BLE001 - fall back to events, and say so
        cu, how = timing.events(lambda: b.run("cupy"), reps=50), f"events (graph capture failed: {type(e).__name__})"
    return WidthTiming(n, original, wide, plan(n, True, wide=True, reduce="narrow", unroll="auto").block, blocks, cu,
                       how)


def measure() -> RMSData:
    """§2 now (about a minute on an H200): identity over 10,000 rows per width, the fallbacks, the times of
    every arm at every width, and ABBA at 7168."""
    prog = Progress("rms identity")
    ident = []
    for i, n in enumerate(WIDTHS):
        ident.append(compare_rows(n, 10000))
        prog(i + 1, len(WIDTHS))
    fb = fallback_checks()
    prog = Progress("rms timing")
    times = []
    for i, n in enumerate(WIDTHS):
        times.append(time_width(n))
        prog(i + 1, len(WIDTHS))
    return RMSData(list(WIDTHS), NORMS_PER_TOKEN, EPS, ident, fb, times, abba(Bench(7168)), in_flight(7168),
                   "live")


def _parse(d: dict, source: str) -> RMSData:
    r = recordings.decode(RMSData, d, "section02")
    r.source = source
    return r


DOOR: Door[RMSData] = Door("RMS norm", "section02", (FAMILY, "spin"), measure, _parse, recordings.encode)
data = DOOR.data
recorded = DOOR.recorded

_benches: dict = {}


def point(n: int, block: int) -> tuple[float, float, str]:
    """(original us, widened us at `block`, source) for the explorer: relaunched now or recorded."""
    def now():
        b = _benches.get(n) or _benches.setdefault(n, Bench(n))
        return b.time("original", reps=5).median, b.time("wide", block, reps=5).median, "measured now"

    def then():
        t = data().times(n)
        return t.original.median, t.wide_blocks[block].median, "recorded"
    return DOOR.choose(live=now, replay=then)


def headline(d: RMSData) -> dict:
    t = d.times(7168)
    ident = d.identity_at(7168)
    f = d.in_flight
    return {"rms_original_us_7168": t.original.median,
            "rms_wide_us_7168": t.wide.median,
            "rms_speedup_7168": t.original.median / t.wide.median,
            "rms_abba_wide_over_original_7168": d.abba_7168.ratio(),
            "rms_cupy_ops_us_7168": t.cupy.median,
            "rms_wide_byte_identical_all_widths": all(x.wide_identical for x in d.identity),
            "rms_fallbacks_byte_identical": all(f.identical for f in d.fallback),
            "rms_wide_reduce_out_rows_changed_7168": ident.reduce_out_rows_changed,
            "rms_wide_reduce_rows_7168": ident.rows,
            "rms_chain_byte_identical_all_widths": all(x.chain_identical for x in d.identity),
            "rms_original_cold_us_7168": f.arm("original", "auto").cold.median,
            "rms_wide_cold_us_7168": f.arm("wide", "auto").cold.median,
            "rms_speedup_cold_7168": f.arm("original", "auto").cold.median / f.arm("wide", "auto").cold.median,
            "rms_chain_original_cold_us_7168": f.arm("original", "1").cold.median,
            "rms_chain_speedup_cold_7168": f.arm("original", "1").cold.median / f.arm("wide", "1").cold.median}
