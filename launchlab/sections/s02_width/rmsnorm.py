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

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from launchlab.core import compiler, floatbits, mode, recordings, sass, sources, timing
from launchlab.core.door import Door
from launchlab.core.progress import Progress
from launchlab.core.recordings import RECORDED
from launchlab.kernels.rms_norm import (EPS, FAMILY, NORMS_PER_TOKEN, REDUCE_THREADS, Bench, Plan, apply, cpu_workers,
                                        emulate_ss, plan, reference, rms_norm, row_chunks, rows, thread_sums, weight)

WIDTHS = (2048, 4096, 5120, 7168, 8192)       # hidden sizes of real models (7168: the lecture's)


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
        b = compiler.compile_offline(FAMILY)
        return ([lp.global_loads for lp in sass.loop_bodies(b.sass(expr))],
                f"NVRTC {b.nvrtc_version[0]}.{b.nvrtc_version[1]}, sm_90")
    except sources.KernelError as e:
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


def measure(rows: int = 10000, inflight_reps: int = 20) -> RMSData:
    """§2 now (about a minute on an H200): identity over `rows` rows per width (10,000 recorded; the course's
    quick live run checks 2,000), the fallbacks, the times of every arm at every width, ABBA at 7168, and the
    loads-in-flight arms cold and hot over `inflight_reps` graph replays each (20 recorded; the quick run 6)."""
    prog = Progress("rms identity")
    ident = []
    for i, n in enumerate(WIDTHS):
        ident.append(compare_rows(n, rows))
        prog(i + 1, len(WIDTHS))
    fb = fallback_checks()
    prog = Progress("rms timing")
    times = []
    for i, n in enumerate(WIDTHS):
        times.append(time_width(n))
        prog(i + 1, len(WIDTHS))
    return RMSData(list(WIDTHS), NORMS_PER_TOKEN, EPS, ident, fb, times, abba(Bench(7168)), in_flight(7168, inflight_reps),
                   "live")


def _parse(d: dict, source: str) -> RMSData:
    r = recordings.decode(RMSData, d, "section02")
    r.source = source
    return r


DOOR: Door[RMSData] = Door("RMS norm", "section02", (FAMILY, "spin"), measure, _parse, recordings.encode,
                           quick={"rows": 2000, "inflight_reps": 6})
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
    return {"norm_saving_alone_ms_per_token": (t.original.median - t.wide.median) * NORMS_PER_TOKEN / 1000,
            "rms_original_us_7168": t.original.median,
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
