"""§3: the KDA decode step -- grid = n_head (starved) vs value tiles (BV = 32), and write elision.

One build (kernels/kda_decode.cu); the body, the launch geometry and the elision mode are chosen at launch:

    LAUNCHLAB_KDA_BODY      walk (baseline: main's 128-thread kernel, a warp walks its columns one by one)
                            | tuned (default: a warp issues 4 columns' loads at once, block sized to the tile)
    LAUNCHLAB_KDA_VT=0      BV = V: grid = n_head, one block per head       (baseline)
    LAUNCHLAB_KDA_VT=1      BV = 32: grid = (V/32, n_head)                   (default; FLA/vLLM's BV)
    LAUNCHLAB_KDA_ELIDE     store (baseline) | rn (default, byte-identical) | fma (the contraction trap)

Main's kernel is walk + BV = V + store; the lecture's fix (PR #77) is walk + BV = 32 + rn; the tuned kernel
is the step after it. Every body, tile and mode computes each column with the same instructions, so all
store/rn arms are byte-identical (compare() checks it on the GPU).

BV = 32 is cited, not tuned: FLA's fused_recurrent KDA and gated-delta-rule decode kernels (which vLLM ships
for decode) launch grid = cdiv(V, BV) * N * HV with BV = 32 (flash-linear-attention, fla/ops/kda/
fused_recurrent.py, fused_recurrent_kda_fwd).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import numpy as np

from launchlab.core import diagnosis, hardware, recordings, sharing, slices, timing
from launchlab.core.door import Door
from launchlab.core.progress import Progress
from launchlab.core.recordings import RECORDED
from launchlab.kernels import stream_read
from launchlab.kernels.kda_decode import (BODIES, BV_TILED, FAMILY, MODES, Bench, K, V, geometry, inputs, plan,
                                          reference, rel_err)
from launchlab.sections.s01_arithmetic import bandwidth

HEADS_TP = {1: 96, 2: 48, 4: 24, 8: 12}   # the lecture's 96 KDA heads, sharded over tp ranks


@dataclass
class VariantCheck:
    """One (body, geometry, elision mode) from the shared initial state, compared byte for byte with main's
    kernel (walk, BV = V, store)."""
    body: str
    bv: int
    mode: str
    identical_to_baseline: bool
    o_elements_differing: int
    state_elements_differing: int
    rel_err_o: float
    rel_err_state: float


@dataclass
class Comparison:
    n_head: int
    V: int
    seed: int
    variants: dict[str, VariantCheck]

    def variant(self, body: str, bv: int, mode_: str) -> VariantCheck:
        return self.variants[variant_name(body, bv, mode_)]


def variant_name(body: str, bv: int, mode_: str) -> str:
    return f"{body} BV={bv} {mode_}"


@dataclass
class SweepPoint:
    """One (tp, body, BV, mode) of the sweep, timed per step in a CUDA graph: `timing` replays one state (hot
    L2, 100 steps), `cold` cycles through state copies larger than the L2."""
    tp: int
    n_head: int
    body: str
    bv: int
    mode: str
    grid: tuple[int, int]
    block: int
    bytes: int
    timing: timing.Timing
    cold: timing.Timing | None = None

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def tbs(self) -> float:
        """Bytes over the hot-L2 time: can exceed what HBM delivers (the state partly comes from L2)."""
        return self.bytes / (self.timing.median * 1e-6) / 1e12

    @property
    def tbs_cold(self) -> float:
        """Bytes over the cold-L2 time: the figure to set against the copy ceiling."""
        return self.bytes / (self.cold.median * 1e-6) / 1e12


@dataclass
class Rung:
    """One arm of the fix at 12 heads, timed both ways: `cold` cycles through state copies larger than the L2
    (compare it with a floor), `hot` replays one state (what most benchmarks print)."""
    body: str
    bv: int
    mode: str
    blocks: int
    block: int
    bytes: int
    cold: timing.Timing
    hot: timing.Timing

    @property
    def name(self) -> str:
        return variant_name(self.body, self.bv, self.mode)


# The lecture's fix, one change at a time, from main's kernel to the tuned one (body, BV, mode):
LADDER = (("walk", V, "store"),       # main: grid = n_head, 128 threads, staged product
          ("walk", BV_TILED, "store"),  # + value tiles: 12 -> 48 blocks (geometry)
          ("walk", BV_TILED, "rn"),     # + write elision: PR #77 complete
          ("tuned", BV_TILED, "rn"))    # + memory parallelism per thread: the next step
# ...and the other corners of the cube, so each change is also measured on its own:
CUBE = tuple((b, bv, m) for b in BODIES for bv in (V, BV_TILED) for m in ("store", "rn"))


@dataclass
class Background:
    kernel: str
    launches: int
    per_launch_us: float
    still_running_at_end: bool


@dataclass
class Contention:
    """The tiled step timed alone, then beside a bandwidth-hungry streaming read on another stream."""
    alone: timing.Timing
    contended: timing.Timing
    background: Background


@dataclass
class Peer:
    """FLA's fused_recurrent_kda at the same shape, timed in this run (or why it was not)."""
    timing: timing.Timing | None = None
    version: str | None = None
    rel_err_o: float | None = None
    rel_err_state: float | None = None
    call: str | None = None
    error: str | None = None
    cold: timing.Timing | None = None

    @property
    def measured(self) -> bool:
        return self.error is None and self.timing is not None


@dataclass
class KDAData:
    """§3's result (and §5's: the tp sweep)."""
    K: int
    V: int
    bv_tiled: int
    compare: Comparison
    compare_96: Comparison
    sweep: list[SweepPoint]
    ladder: list[Rung]
    abba: timing.ABBA
    contention: Contention
    fla: Peer
    fla_96: Peer | None = None
    contention_main: Contention | None = None     # main's graph-timed step beside the reads (issue 41); None in
                                                  # a recording made before it
    source: str = field(default="", metadata={RECORDED: False})

    def point(self, tp: int, bv: int, mode_: str, body: str = "tuned") -> SweepPoint:
        for r in self.sweep:
            if (r.tp, r.body, r.bv, r.mode) == (tp, body, bv, mode_):
                return r
        raise KeyError(f"no sweep point tp={tp} {body} BV={bv} {mode_}")

    def rung(self, body: str, bv: int, mode_: str) -> Rung:
        for r in self.ladder:
            if (r.body, r.bv, r.mode) == (body, bv, mode_):
                return r
        raise KeyError(f"no measured arm {variant_name(body, bv, mode_)}")

    @property
    def main(self) -> Rung:
        """Main's kernel at 12 heads: walk, grid = n_head, staged product."""
        return self.rung(*LADDER[0])

    @property
    def fixed(self) -> Rung:
        """The lecture's fix applied to it: value tiles and write elision."""
        return self.rung(*LADDER[2])

    @property
    def tuned(self) -> Rung:
        return self.rung(*LADDER[3])

    def baseline(self, tp: int) -> SweepPoint:
        """The tuned body at grid = n_head, staged (the sweep's starved corner)."""
        return self.point(tp, self.V, "store")

    def tiled(self, tp: int) -> SweepPoint:
        return self.point(tp, self.bv_tiled, "rn")


def compare(n_head: int = 12, v_dim: int = V, seed: int = 0) -> Comparison:
    """Every (body, geometry, mode) from one initial state: byte comparisons of o and the new state with main's
    kernel, and each variant's error against the float64 reference."""
    b = Bench(n_head, v_dim, seed)
    ref_o, ref_s = reference(**b.host)
    out = {}
    for body in BODIES:
        for bv in (v_dim, BV_TILED):
            for m in MODES:
                out[(body, bv, m)] = b.one_step(bv, m, body)
    base_o, base_s = out[("walk", v_dim, "store")]
    res = Comparison(n_head, v_dim, seed, {})
    for (body, bv, m), (o, s_) in out.items():
        diff_o = int(np.sum(o.view(np.uint32) != base_o.view(np.uint32)))
        diff_s = int(np.sum(s_.view(np.uint32) != base_s.view(np.uint32)))
        res.variants[variant_name(body, bv, m)] = VariantCheck(
            body, bv, m, diff_o == 0 and diff_s == 0, diff_o, diff_s, rel_err(o, ref_o), rel_err(s_, ref_s))
    return res


def ladder(n_head: int = 12, reps: int = 30) -> list[Rung]:
    """Every corner of the cube (body x BV x mode) at `n_head`, cold and hot, `reps` graph replays each."""
    b = Bench(n_head, cold=True)
    out = []
    for body, bv, m in CUBE:
        p = plan(n_head, V, bv, m, body)
        out.append(Rung(body, bv, m, p.blocks, p.block, p.bytes_moved(), b.time_cold(bv, m, body, reps=reps),
                        b.time(bv, m, body, reps=reps)))
    return out


BACKGROUND_BYTES = 64 << 20     # each background read: 64 MiB (past the L2, so it really streams from HBM)


def contention(n_head: int = 12, reps: int = 300, seed: int = 0) -> Contention:
    """The tiled step timed alone, then while another stream runs a bandwidth-hungry streaming read (one
    256-thread block per SM, so SM slots stay free and the two kernels contend for bandwidth). Each rep runs
    on the next state copy (cold L2, as in a model), so the times can be set against the floor. The background
    is many short reads (64 MiB, ~25 us each) rather than a few long ones, so a rep that lands behind one
    waits at most that long and no single rep dominates the spread. They are replayed from a CUDA graph
    (enqueuing thousands of launches one by one from Python is as slow as running them), for twice as long
    as the alone series took, and `still_running_at_end` checks that they outlasted every rep."""
    import time
    b = Bench(n_head, seed=seed, cold=True)
    t0 = time.perf_counter()
    alone = b.events(BV_TILED, "rn", "tuned", reps=reps)
    mine = slices.stream()                              # a slice's stream inside one (launchlab.core.slices)
    other, launches, per_read_us = _background(time.perf_counter() - t0)
    contended = b.events(BV_TILED, "rn", "tuned", reps=reps, stream=mine)
    return Contention(alone, contended, _background_ends(other, launches, per_read_us))


def _background(alone_s: float):  # pragma: no mutate block (live only)
    """Start the background on a stream of its own: streaming reads, one 256-thread block per SM, replayed from a
    graph of 200 for twice `alone_s` (the alone series' wall time). Returns (stream, launches, µs per read)."""
    sr = stream_read.StreamRead(BACKGROUND_BYTES)
    other = slices.stream()
    per_read_us = sr.time(132, 256, reps=5).median
    chunk = 200
    g = timing.capture(lambda: sr.launch(132, 256), chunk, other)
    replays = int(2 * alone_s / (chunk * per_read_us * 1e-6)) + 2
    for _ in range(replays):
        g.launch(other)
    return other, replays * chunk, per_read_us


def _background_ends(other, launches: int, per_read_us: float) -> Background:  # pragma: no mutate block (live only)
    still_running = not other.done                     # checked before waiting: did it outlast every rep?
    other.synchronize()
    return Background(f"stream_read<4,4>, grid 132 x block 256, {BACKGROUND_BYTES >> 20} MiB per launch",
                      launches, per_read_us, bool(still_running))


def contention_main(n_head: int = 12, reps: int = 30, seed: int = 0) -> Contention:
    """Contention on a kernel whose time is its own (issue 41): main's step (walk, grid = n_head, store; about
    26 µs) in a CUDA graph cycling through the state copies -- cold, and no launch cost in the time -- replayed
    `reps` times alone, then as many times while the same background reads run on another stream. The graph is
    captured before the background starts (a capture synchronizes the device, which would wait for it)."""
    import time
    b = Bench(n_head, seed=seed, cold=True)
    cap = b.capture_cold(V, "store", "walk")
    t0 = time.perf_counter()
    alone = timing.replay_cold(cap, reps=reps)
    other, launches, per_read_us = _background(time.perf_counter() - t0)
    contended = timing.replay_cold(cap, reps=reps, warmup=0)
    return Contention(alone, contended, _background_ends(other, launches, per_read_us))


class PeerMissing(RuntimeError):
    """The peer's package is not installed on this machine."""


def fla_peer(n_head: int = 12, launches: int = 100, reps: int = 10, seed: int = 0) -> Peer:
    """FLA's fused_recurrent_kda (Triton, BV = 32) at the same shape, timed in a torch CUDA graph in this
    run -- hot (one state) and cold (cycling through state copies larger than the L2) -- and checked against
    the float64 reference. Needs torch, triton and fla-core: without fla-core it raises PeerMissing before
    importing torch (a first torch import costs a fresh process seconds, for a peer that cannot run)."""
    import importlib.util
    if importlib.util.find_spec("fla") is None:
        raise PeerMissing("fla-core is not installed here (pip install fla-core, with torch and triton): FLA's "
                          "kernel is not timed in this run")
    import torch
    from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd
    h = inputs(n_head, V, seed)
    dev = "cuda"
    q = torch.tensor(h["q"], device=dev).view(1, 1, n_head, K)
    k = torch.tensor(h["k"], device=dev).view(1, 1, n_head, K)
    v = torch.tensor(h["v"], device=dev).view(1, 1, n_head, V)
    g = torch.tensor(h["g"], device=dev).view(1, 1, n_head, K)
    beta = torch.tensor(h["beta"], device=dev).view(1, 1, n_head)
    s0 = torch.tensor(h["state"], device=dev).view(1, n_head, V, K)
    state = s0.clone()
    out = torch.empty_like(v)

    def call_on(st):
        return lambda: fused_recurrent_kda_fwd(q, k, v, g, beta, initial_state=st, scale=1.0,
                                               inplace_final_state=True, state_v_first=True, out=out)
    call = call_on(state)
    call()
    torch.cuda.synchronize()
    state.copy_(s0)
    call()
    torch.cuda.synchronize()
    ref_o, ref_s = reference(**h)
    err_o = rel_err(out.view(n_head, V).cpu().numpy(), ref_o)
    err_s = rel_err(state.view(n_head, V, K).cpu().numpy(), ref_s)
    hot = timing.torch_graph([call], launches, reps)
    copies = [s0.clone() for _ in range(timing.copies_for(s0.numel() * 4, hardware.from_device().l2_bytes))]
    cold = timing.torch_graph([call_on(c) for c in copies], len(copies), reps)
    import fla
    return Peer(timing.Timing(hot, "graph", launches, "FLA fused_recurrent_kda_fwd hot", sharing.note()),
                getattr(fla, "__version__", "?"), err_o, err_s,
                "fused_recurrent_kda_fwd(q, k, v, g, beta, initial_state, scale=1.0, "
                "inplace_final_state=True, state_v_first=True)",
                cold=timing.Timing(cold, "graph-cold", len(copies), "FLA fused_recurrent_kda_fwd cold",
                                   sharing.note()))


# ------------------------------------------------------------------ the section's door
def abba(pairs: int = 3, n_head: int = 12) -> timing.ABBA:
    """Main's kernel (A: walk, grid = n_head, staged) vs the lecture's fix (B: walk, BV = 32, recomputed), one
    build, interleaved ABBA, each rep a cold-L2 graph series."""
    b = Bench(n_head, cold=True)
    return timing.abba(lambda: b.time_cold(V, "store", "walk", reps=5),
                       lambda: b.time_cold(BV_TILED, "rn", "walk", reps=5), pairs=pairs,
                       labels=("main: grid=n_head, store", "fix: BV=32, rn"))


def measure() -> KDAData:
    """§3 now: byte comparisons at 12 and 96 heads, the fix one change at a time (cold and hot), the
    tp x body x BV x mode sweep, ABBA, the contention experiment, and FLA's kernel beside ours when fla-core
    is installed."""
    cmp12, cmp96 = compare(12), compare(96, seed=1)
    steps = ladder(12)
    sweep = []
    prog = Progress("kda sweep")
    jobs = ([(tp, "tuned", bv, m) for tp in (1, 2, 4, 8) for bv in (16, 32, 64, 128) for m in ("store", "rn")]
            + [(tp, "walk", bv, m) for tp in (1, 2, 4, 8) for bv in (16, 32, 64, 128) for m in ("store", "rn")])
    benches: dict[int, Bench] = {}
    for i, (tp, body, bv, m) in enumerate(jobs):
        h = HEADS_TP[tp]
        b = benches.get(h) or benches.setdefault(h, Bench(h, cold=True))
        p = plan(h, V, bv, m, body)
        sweep.append(SweepPoint(tp, h, body, bv, m, p.grid, p.block, p.bytes_moved(), b.time(bv, m, body),
                                b.time_cold(bv, m, body)))
        prog(i + 1, len(jobs))
    ab = abba()
    cont = contention(12)
    cont_main = contention_main(12)
    try:
        fla, fla96 = fla_peer(12), fla_peer(96)
    except PeerMissing as e:
        fla, fla96 = Peer(error=str(e)), None
    except Exception as e:  # noqa: BLE001 - the peer is optional on machines without torch/fla
        import traceback
        where = traceback.extract_tb(e.__traceback__)[-1]
        fla, fla96 = Peer(error=f"{type(e).__name__}: {str(e).strip()} (at {where.filename}:{where.lineno})"), None
    return KDAData(K, V, BV_TILED, cmp12, cmp96, sweep, steps, ab, cont, fla, fla96, cont_main, "live")


def _parse(d: dict, source: str) -> KDAData:
    r = recordings.decode(KDAData, d, "section03")
    r.source = source
    return r


DOOR: Door[KDAData] = Door("KDA decode step, and §5's tp sweep", "section03", (FAMILY, "stream_read", "spin"), measure, _parse,
                           recordings.encode)
data = DOOR.data
recorded = DOOR.recorded

_benches: dict = {}


def point(tp: int, bv: int, mode_: str, body: str = "tuned") -> tuple[float, str]:
    """(us per step, source) for the explorer: relaunched now in a CUDA graph (hot L2), or the recorded
    sweep point."""
    def now():
        h = HEADS_TP[tp]
        b = _benches.get(h) or _benches.setdefault(h, Bench(h))
        return b.time(bv, mode_, body, reps=5).median, "measured now"
    return DOOR.choose(live=now, replay=lambda: (data().point(tp, bv, mode_, body).timing.median, "recorded"))


def diagnose_rung(r: Rung, ceiling_tbs: float, l2: str = "cold", n_head: int = 12) -> diagnosis.Diagnosis:
    """§3.1's diagnostic on one arm: its bytes against the copy ceiling (the lecture's floor: bytes /
    bandwidth, no launch cost), its reps (cold by default: a floor is only compared with a cold time), and
    its geometry."""
    t = r.cold if l2 == "cold" else r.hot
    return diagnosis.diagnose(r.bytes, t.reps_us, ceiling_tbs, geometry=geometry(n_head, r.bv, r.mode, r.body))


def headline(d: KDAData) -> dict:
    base, tiled = d.baseline(8).timing.median, d.tiled(8).timing.median
    main, fixed, tuned = d.main.cold.median, d.fixed.cold.median, d.tuned.cold.median
    tiles = d.rung("walk", d.bv_tiled, "store").cold.median
    out = {"main_kernel_cold_us": main, "main_kernel_hot_us": d.main.hot.median,
           "fix_cold_us": fixed, "tuned_cold_us": tuned,
           "fix_speedup_cold": main / fixed,
           "fix_geometry_speedup_cold": main / tiles,
           "fix_elision_speedup_cold": tiles / fixed,
           "tuned_over_fix_speedup_cold": fixed / tuned,
           "main_to_tuned_speedup_cold": main / tuned,
           "abba_fix_over_main_cold": d.abba.ratio(),
           "kda_baseline_us_12h": base, "kda_tiled_us_12h": tiled,
           "kda_tiled_speedup_12h": base / tiled,
           "kda_baseline_blocks_12h": d.baseline(8).blocks,
           "kda_tiled_blocks_12h": d.tiled(8).blocks,
           "kda_rn_byte_identical": all(v.identical_to_baseline for v in d.compare.variants.values()
                                        if v.mode != "fma"),
           "kda_fma_byte_identical": d.compare.variant("walk", d.bv_tiled, "fma").identical_to_baseline,
           "fix_projected_tok_s_gain_pct": 100 * LECTURE_PR77.token_gain_from(main / fixed),
           "kda_contended_spread_pct": 100 * diagnosis.robust_spread(d.contention.contended.reps_us),
           "kda_alone_spread_pct": 100 * diagnosis.robust_spread(d.contention.alone.reps_us)}
    if d.contention_main is not None:                  # main's own time beside the reads (issue 41)
        cm = d.contention_main
        out.update({"kda_main_alone_spread_pct": 100 * diagnosis.robust_spread(cm.alone.reps_us),
                    "kda_main_contended_spread_pct": 100 * diagnosis.robust_spread(cm.contended.reps_us),
                    "kda_main_contended_shift_pct": 100 * (cm.contended.median / cm.alone.median - 1)})
    if d.fla.measured:
        out["kda_vs_fla_12h"] = d.tiled(8).timing.median / statistics.median(d.fla.timing.reps_us)
        if d.fla.cold is not None:
            out["kda_vs_fla_cold_12h"] = tuned / d.fla.cold.median
        if d.fla_96 is not None and d.fla_96.measured:
            out["kda_vs_fla_96h"] = d.tiled(1).timing.median / statistics.median(d.fla_96.timing.reps_us)
    return out


def result(d: KDAData) -> str:
    """§3's result first (issue 41): the lecture's fix on this GPU -- 12 -> 48 blocks, the cold step, the bytes,
    and the lecture's end-to-end figure -- in four lines, before the notebooks take it apart."""
    m, f = d.main, d.fixed
    same = all(c.variant(f.body, f.bv, f.mode).identical_to_baseline for c in (d.compare, d.compare_96))
    e = LECTURE_PR77
    main = f"main : {m.blocks:>2} blocks of {m.block} (grid = n_head), the product staged in memory"
    fix = f"fix  : {f.blocks:>2} blocks of {f.block} (value tiles, BV = {f.bv}), nothing staged"
    return "\n".join([
        f"{main:<70}{m.cold.median:6.2f} µs per step, cold",
        f"{fix:<70}{f.cold.median:6.2f} µs, {m.cold.median / f.cold.median:.1f}x (ABBA {1 / d.abba.ratio():.1f}x)",
        f"bytes: the fix's output and new state are {'byte-identical to' if same else 'NOT identical to'} main's, "
        f"at 12 and 96 heads",
        f"the lecture, end to end: {e.ms_before} -> {e.ms_after} ms/token, "
        f"{100 * (e.tok_s_after / e.tok_s_before - 1):+.1f} % tok/s (the course's own step: notebook 06)"])


def starvation_headline(d: KDAData, ceiling: "bandwidth.Ceiling") -> dict:
    """Main's kernel through §3.1's diagnostic, cold, against the copy ceiling (notebook 01's recording)."""
    g = diagnose_rung(d.main, ceiling.tbs)
    return {"main_kernel_ratio": g.ratio, "main_kernel_spread_pct": 100 * g.spread,
            "main_kernel_stddev_pct": 100 * g.stddev_spread, "main_kernel_floor_us": g.floor_us,
            "main_kernel_starvation": g.verdict == "starvation",
            "fix_ratio": diagnose_rung(d.fixed, ceiling.tbs).ratio,
            "tuned_ratio": diagnose_rung(d.tuned, ceiling.tbs).ratio}


# ------------------------------------------------------------------ the lecture's end-to-end numbers (§3, PR #77)
@dataclass(frozen=True)
class EndToEnd:
    """PR #77 as the lecture reports it, at the scored 131,072-token context on 8 H200s (tp = 8)."""
    kda_share: float = 0.118          # the KDA step's share of all GPU kernel time before the fix
    ms_before: float = 52.96          # ms per token, main
    ms_after: float = 49.63           # ms per token, with the value tiles and the write elision
    tok_s_before: float = 18.88
    tok_s_after: float = 20.15
    kernel_us: float = 87.0           # one launch of the starved kernel (its profile)

    @property
    def kda_ms_before(self) -> float:
        return self.kda_share * self.ms_before

    @property
    def kda_ms_after(self) -> float:
        """If the whole saving came out of the KDA step (the PR changed nothing else)."""
        return self.kda_ms_before - (self.ms_before - self.ms_after)

    @property
    def kernel_speedup(self) -> float:
        return self.kda_ms_before / self.kda_ms_after

    @property
    def launches_per_token(self) -> float:
        return self.kda_ms_before * 1000 / self.kernel_us

    def token_gain_from(self, kernel_speedup: float) -> float:
        """The tok/s gain the same end-to-end share would give at another kernel speed-up (Amdahl)."""
        return 1 / (1 - self.kda_share + self.kda_share / kernel_speedup) - 1


LECTURE_PR77 = EndToEnd()
