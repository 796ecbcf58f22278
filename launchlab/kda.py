"""§3: the KDA decode step -- grid = n_head (starved) vs value tiles (BV = 32), and write elision.

One kernel body (kernels/kda_decode.cu); the launch geometry and the elision mode are chosen at launch:

    LAUNCHLAB_KDA_VT=0      BV = V: grid = n_head, one block per head       (baseline)
    LAUNCHLAB_KDA_VT=1      BV = 32: grid = (V/32, n_head)                   (default; FLA/vLLM's BV)
    LAUNCHLAB_KDA_ELIDE     store (baseline) | rn (default, byte-identical) | fma (the contraction trap)

BV = 32 is cited, not tuned: FLA's fused_recurrent KDA and gated-delta-rule decode kernels (which vLLM ships
for decode) launch grid = cdiv(V, BV) * N * HV with BV = 32 (flash-linear-attention, fla/ops/kda/
fused_recurrent.py, fused_recurrent_kda_fwd).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import numpy as np

from . import bandwidth, diagnosis, gates, hardware, kernels, launch, mode, occupancy, recordings, timing
from .door import Door
from .progress import Progress
from .recordings import RECORDED

FAMILY = "kda_decode"
K = 128                      # the kernel's key width: one float4 per lane of a warp
V = 128
BV_TILED = 32
COLS_PER_WARP = 4
MODES = {"store": 0, "rn": 1, "fma": 2}
HEADS_TP = {1: 96, 2: 48, 4: 24, 8: 12}   # the lecture's 96 KDA heads, sharded over tp ranks


class KDAError(launch.LaunchError):
    pass


@dataclass(frozen=True)
class Plan:
    n_head: int
    v: int
    bv: int
    mode: str

    @property
    def grid(self) -> tuple[int, int]:
        return (self.v // self.bv, self.n_head)

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def block(self) -> int:
        return self.bv // COLS_PER_WARP * 32

    @property
    def expr(self) -> str:
        return f"kda_decode<{MODES[self.mode]}>"

    def bytes_moved(self) -> int:
        return bytes_moved(self.n_head, self.v, self.mode)


def geometry(n_head: int, bv: int, mode_: str, gpu="H200") -> diagnosis.Geometry:
    """Where one step's blocks land: its grid, and how many of its blocks one SM holds (the occupancy
    calculator, with the kernel's registers: the loaded kernel's live, the NVRTC compile's in replay)."""
    p = plan(n_head, V, bv, mode_)
    regs, smem = kernels.resources(FAMILY, p.expr)
    occ = occupancy.occupancy(p.block, regs, smem, gpu)
    return diagnosis.Geometry(p.blocks, hardware.spec(gpu).sm_count, occ.blocks_per_sm)


def bytes_moved(n_head: int, v: int = V, mode_: str = "store") -> int:
    """Global bytes per launch: the state is read and written once, plus (store) the staged product written
    and read back, or (rn/fma) the state read a second time; plus the per-head vectors."""
    state = v * K * 4
    passes = {"store": 4, "rn": 3, "fma": 3}[mode_]
    vectors = (3 * K + 2 * v + 1) * 4
    return n_head * (passes * state + vectors)


def plan(n_head: int, v: int = V, bv: int | None = None, mode_: str | None = None) -> Plan:
    if isinstance(n_head, bool) or not isinstance(n_head, (int, np.integer)) or n_head < 1:
        raise KDAError(f"n_head must be a positive integer, got {n_head!r}")
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise KDAError(f"V must be a positive integer, got {v!r}")
    if bv is None:
        bv = BV_TILED if gates.value("KDA_VT") == "1" else v
    mode_ = gates.value("KDA_ELIDE") if mode_ is None else mode_
    if mode_ not in MODES:
        raise KDAError(f"mode must be one of {', '.join(MODES)}, got {mode_!r}")
    if bv % COLS_PER_WARP or bv < COLS_PER_WARP:
        raise KDAError(f"BV must be a positive multiple of {COLS_PER_WARP} (columns per warp), got {bv}")
    if bv > 32 * COLS_PER_WARP:
        raise KDAError(f"BV = {bv} needs {bv // COLS_PER_WARP * 32} threads per block; the kernel's limit is "
                       f"BV <= {32 * COLS_PER_WARP} (a block of 1024 threads)")
    if v % bv:
        raise KDAError(f"V = {v} is not a multiple of BV = {bv}: value tiles must divide V")
    return Plan(int(n_head), int(v), int(bv), mode_)


def validate(q, k, v, g, beta, state, o, n_head: int, v_dim: int) -> None:
    """Refuse bad inputs before any launch: dtypes, K, head counts, sizes, alignment."""
    arrays = dict(q=q, k=k, v=v, g=g, beta=beta, state=state, o=o)
    for name, a in arrays.items():
        if a.dtype != np.float32:
            raise KDAError(f"{name} must be float32, got {a.dtype}")
        if not a.flags.c_contiguous:
            raise KDAError(f"{name} must be contiguous")
    for name in ("q", "k", "g"):
        a = arrays[name]
        if a.ndim != 2 or a.shape[1] != K:
            raise KDAError(f"{name} must be (n_head, K={K}); got shape {a.shape} (this kernel is built for K = {K})")
        if a.shape[0] != n_head:
            raise KDAError(f"{name} has {a.shape[0]} heads, expected {n_head}")
    for name in ("v", "o"):
        a = arrays[name]
        if a.shape != (n_head, v_dim):
            raise KDAError(f"{name} must be (n_head={n_head}, V={v_dim}), got {a.shape}")
    if beta.shape != (n_head,):
        raise KDAError(f"beta must be ({n_head},), got {beta.shape}")
    if state.shape != (n_head, v_dim, K):
        raise KDAError(f"state must be (n_head, V, K) = ({n_head}, {v_dim}, {K}) in the j-major layout, "
                       f"got {state.shape}")
    for name in ("q", "k", "g", "state"):
        if not launch.aligned16(arrays[name]):
            raise KDAError(f"{name} must be 16-byte aligned (float4 loads)")


def step(q, k, v, g, beta, state, o, scratch=None, bv: int | None = None, mode_: str | None = None) -> Plan:
    """One decode step on CuPy arrays, in place on `state`; o receives the output."""
    mode.require_live("launching the KDA decode step")
    n_head, v_dim = v.shape
    p = plan(n_head, v_dim, bv, mode_)
    validate(q, k, v, g, beta, state, o, n_head, v_dim)
    if scratch is None or scratch.size < state.size:
        if p.mode == "store":
            raise KDAError("mode 'store' needs a scratch buffer the size of the state")
        scratch = state           # unused by rn/fma
    kernels.kernel(FAMILY, p.expr).launch(p.grid, p.block, (q, k, v, g, beta, state, scratch, o, np.int32(v_dim)))
    return p


# ------------------------------------------------------------------ references and inputs
def reference(q, k, v, g, beta, state):
    """float64 reference of one step: (o, new state) with state j-major (H, V, K)."""
    q, k, v, g, beta = (np.asarray(a, np.float64) for a in (q, k, v, g, beta))
    S = np.asarray(state, np.float64) * np.exp(g)[:, None, :]          # decay over i
    sk = np.einsum("hji,hi->hj", S, k)
    d = beta[:, None] * (v - sk)
    S = S + d[:, :, None] * k[:, None, :]
    o = np.einsum("hji,hi->hj", S, q)
    return o, S


def inputs(n_head: int, v_dim: int = V, seed: int = 0) -> dict:
    """Random decode-step inputs of realistic scale: unit-norm k, q scaled by K^-1/2, log-decays in
    (-0.5, -0.01), beta in (0, 1), a random non-zero state."""
    r = np.random.default_rng([seed, n_head, v_dim])
    k = r.standard_normal((n_head, K))
    k /= np.linalg.norm(k, axis=1, keepdims=True)
    return {"q": (r.standard_normal((n_head, K)) * K ** -0.5).astype(np.float32),
            "k": k.astype(np.float32),
            "v": r.standard_normal((n_head, v_dim)).astype(np.float32),
            "g": (-r.uniform(0.01, 0.5, (n_head, K))).astype(np.float32),
            "beta": r.uniform(0.05, 0.95, n_head).astype(np.float32),
            "state": (r.standard_normal((n_head, v_dim, K)) * 0.1).astype(np.float32)}


def rel_err(x, ref) -> float:
    ref = np.asarray(ref, np.float64)
    return float(np.max(np.abs(np.asarray(x, np.float64) - ref)) / np.max(np.abs(ref)))


# ------------------------------------------------------------------ live measurements
class Bench:
    """The step on the GPU at one head count, every variant from the same initial state."""

    def __init__(self, n_head: int, v_dim: int = V, seed: int = 0):
        mode.require_live("timing the KDA decode step")
        import cupy as cp
        self.cp, self.n_head, self.v = cp, n_head, v_dim
        self.host = inputs(n_head, v_dim, seed)
        d = {k: cp.asarray(a) for k, a in self.host.items()}
        self.q, self.k, self.vv, self.g, self.beta = d["q"], d["k"], d["v"], d["g"], d["beta"]
        self.state0 = d["state"]
        self.state = self.state0.copy()
        self.scratch = cp.empty_like(self.state)
        self.o = cp.empty((n_head, v_dim), dtype=cp.float32)

    def run(self, bv=None, mode_=None):
        return step(self.q, self.k, self.vv, self.g, self.beta, self.state, self.o, self.scratch, bv, mode_)

    def one_step(self, bv, mode_):
        """One step from the initial state; returns (o, state) on the host."""
        self.state[...] = self.state0
        self.o.fill(np.nan)
        self.run(bv, mode_)
        return self.cp.asnumpy(self.o), self.cp.asnumpy(self.state)

    def time(self, bv=None, mode_=None, reps: int = 10, launches: int = 100):
        self.state[...] = self.state0
        return timing.graph(lambda: self.run(bv, mode_), launches=launches, reps=reps,
                            label=f"kda H={self.n_head} BV={bv} {mode_}")

    def events(self, bv=None, mode_=None, reps: int = 200, stream=None):
        self.state[...] = self.state0
        return timing.events(lambda: self.run(bv, mode_), reps=reps, warmup=5, stream=stream)


@dataclass
class VariantCheck:
    """One (geometry, elision mode) from the shared initial state, compared byte for byte with the baseline."""
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


@dataclass
class SweepPoint:
    """One (tp, BV, mode) of the sweep, timed per step in a CUDA graph of 100 steps."""
    tp: int
    n_head: int
    bv: int
    mode: str
    grid: tuple[int, int]
    block: int
    bytes: int
    timing: timing.Timing

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def tbs(self) -> float:
        return self.bytes / (self.timing.median * 1e-6) / 1e12


@dataclass
class Diagnostic:
    """§3.1's evidence at 12 heads: >= 10 reps of the starved baseline and of the tiled step, in graphs."""
    baseline: timing.Timing
    tiled: timing.Timing
    bytes_baseline: int
    bytes_tiled: int


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
    diag: Diagnostic
    abba: timing.ABBA
    contention: Contention
    fla: Peer
    fla_96: Peer | None = None
    source: str = field(default="", metadata={RECORDED: False})

    def point(self, tp: int, bv: int, mode_: str) -> SweepPoint:
        for r in self.sweep:
            if (r.tp, r.bv, r.mode) == (tp, bv, mode_):
                return r
        raise KeyError(f"no sweep point tp={tp} BV={bv} {mode_}")

    def baseline(self, tp: int) -> SweepPoint:
        return self.point(tp, self.V, "store")

    def tiled(self, tp: int) -> SweepPoint:
        return self.point(tp, self.bv_tiled, "rn")


def compare(n_head: int = 12, v_dim: int = V, seed: int = 0) -> Comparison:
    """Every (geometry, mode) from one initial state: byte comparisons of o and the new state, and each
    variant's error against the float64 reference."""
    b = Bench(n_head, v_dim, seed)
    ref_o, ref_s = reference(**b.host)
    out = {}
    for bv in (v_dim, BV_TILED):
        for m in MODES:
            out[(bv, m)] = b.one_step(bv, m)
    base_o, base_s = out[(v_dim, "store")]

    def same(a, b_):
        return bool(a[0].tobytes() == b_[0].tobytes() and a[1].tobytes() == b_[1].tobytes())
    res = Comparison(n_head, v_dim, seed, {})
    for (bv, m), (o, s) in out.items():
        diff_o = int(np.sum(o.view(np.uint32) != base_o.view(np.uint32)))
        diff_s = int(np.sum(s.view(np.uint32) != base_s.view(np.uint32)))
        res.variants[f"BV={bv} {m}"] = VariantCheck(bv, m, same((o, s), (base_o, base_s)), diff_o, diff_s,
                                                    rel_err(o, ref_o), rel_err(s, ref_s))
    return res


def contention(n_head: int = 12, reps: int = 300, seed: int = 0) -> Contention:
    """The tiled step timed alone, then while another stream runs a bandwidth-hungry streaming read (one
    256-thread block per SM, so SM slots stay free and the two kernels contend for bandwidth)."""
    import cupy as cp
    b = Bench(n_head, seed=seed)
    alone = b.events(BV_TILED, "rn", reps=reps)
    sr = bandwidth.StreamRead()
    other = cp.cuda.Stream(non_blocking=True)
    mine = cp.cuda.Stream(non_blocking=True)
    # enough background reads to outlast the measured reps (each rep: a 200 us spin + the step)
    per_read_us = sr.time(132, 256, reps=3).median
    n_reads = int(reps * 260 / per_read_us) + 20
    with other:
        for _ in range(n_reads):
            sr.launch(132, 256)
    contended = b.events(BV_TILED, "rn", reps=reps, stream=mine)
    still_running = not other.done
    other.synchronize()
    return Contention(alone, contended, Background("stream_read<4,4>, grid 132 x block 256, 1 GiB per launch",
                                                   n_reads, per_read_us, bool(still_running)))


def fla_peer(n_head: int = 12, launches: int = 100, reps: int = 10, seed: int = 0) -> Peer:
    """FLA's fused_recurrent_kda (Triton, BV = 32) at the same shape, timed in a torch CUDA graph in this
    run, and checked against our kernel's output. Needs torch, triton and fla-core."""
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

    def call():
        fused_recurrent_kda_fwd(q, k, v, g, beta, initial_state=state, scale=1.0, inplace_final_state=True,
                                state_v_first=True, out=out)
    call()
    torch.cuda.synchronize()
    state.copy_(s0)
    call()
    torch.cuda.synchronize()
    ref_o, ref_s = reference(**h)
    err_o = rel_err(out.view(n_head, V).cpu().numpy(), ref_o)
    err_s = rel_err(state.view(n_head, V, K).cpu().numpy(), ref_s)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            call()
    times = []
    for _ in range(2):
        graph.replay()
    torch.cuda.synchronize()
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / launches)
    import fla
    return Peer(timing.Timing(times, "graph", launches, "FLA fused_recurrent_kda_fwd"),
                getattr(fla, "__version__", "?"), err_o, err_s,
                "fused_recurrent_kda_fwd(q, k, v, g, beta, initial_state, scale=1.0, "
                "inplace_final_state=True, state_v_first=True)")


# ------------------------------------------------------------------ the section's door
def abba(b: Bench, pairs: int = 3) -> timing.ABBA:
    """Baseline (A: grid = n_head, staged) vs tiled (B: BV = 32, recomputed), one build, interleaved ABBA."""
    return timing.abba(lambda: b.time(V, "store", reps=5), lambda: b.time(BV_TILED, "rn", reps=5), pairs=pairs,
                       labels=("baseline grid=n_head, store", "value-tiled BV=32, rn"))


def measure() -> KDAData:
    """§3 now: byte comparisons at 12 and 96 heads, the tp x BV x mode sweep, the diagnostic's reps, ABBA,
    the contention experiment, and FLA's kernel beside ours when fla-core is installed."""
    cmp12, cmp96 = compare(12), compare(96, seed=1)
    sweep = []
    prog = Progress("kda sweep")
    jobs = [(tp, bv, m) for tp in (1, 2, 4, 8) for bv in (16, 32, 64, 128) for m in ("store", "rn")]
    benches: dict[int, Bench] = {}
    for i, (tp, bv, m) in enumerate(jobs):
        h = HEADS_TP[tp]
        b = benches.get(h) or benches.setdefault(h, Bench(h))
        p = plan(h, V, bv, m)
        sweep.append(SweepPoint(tp, h, bv, m, p.grid, p.block, p.bytes_moved(), b.time(bv, m)))
        prog(i + 1, len(jobs))
    b = benches[12]
    diag = Diagnostic(b.time(V, "store", reps=30), b.time(BV_TILED, "rn", reps=30),
                      bytes_moved(12, V, "store"), bytes_moved(12, V, "rn"))
    ab = abba(b)
    cont = contention(12)
    try:
        fla, fla96 = fla_peer(12), fla_peer(96)
    except Exception as e:  # noqa: BLE001 - the peer is optional on machines without torch/fla
        fla, fla96 = Peer(error=f"{type(e).__name__}: {e}"), None
    return KDAData(K, V, BV_TILED, cmp12, cmp96, sweep, diag, ab, cont, fla, fla96, "live")


def _parse(d: dict, source: str) -> KDAData:
    r = recordings.decode(KDAData, d, "section03")
    r.source = source
    return r


DOOR: Door[KDAData] = Door("KDA decode step", "section03", (FAMILY, "stream_read", "spin"), measure, _parse,
                           recordings.encode)
data = DOOR.data
recorded = DOOR.recorded

_benches: dict = {}


def point(tp: int, bv: int, mode_: str) -> tuple[float, str]:
    """(us per step, source) for the explorer: relaunched now in a CUDA graph, or the recorded sweep point."""
    def now():
        h = HEADS_TP[tp]
        b = _benches.get(h) or _benches.setdefault(h, Bench(h))
        return b.time(bv, mode_, reps=5).median, "measured now"
    return DOOR.choose(live=now, replay=lambda: (data().point(tp, bv, mode_).timing.median, "recorded"))


def headline(d: KDAData) -> dict:
    base, tiled = d.diag.baseline.median, d.diag.tiled.median
    out = {"kda_baseline_us_12h": base, "kda_tiled_us_12h": tiled,
           "kda_tiled_speedup_12h": base / tiled,
           "kda_abba_tiled_over_baseline_12h": d.abba.ratio(),
           "kda_baseline_spread_pct_12h": 100 * d.diag.baseline.stddev / base,
           "kda_baseline_blocks_12h": d.baseline(8).blocks,
           "kda_tiled_blocks_12h": d.tiled(8).blocks,
           "kda_rn_byte_identical": d.compare.variants[f"BV={d.bv_tiled} rn"].identical_to_baseline,
           "kda_fma_byte_identical": d.compare.variants[f"BV={d.bv_tiled} fma"].identical_to_baseline,
           "kda_contended_spread_pct": 100 * d.contention.contended.stddev / d.contention.contended.median,
           "kda_alone_spread_pct": 100 * d.contention.alone.stddev / d.contention.alone.median}
    if d.fla.measured:
        out["kda_vs_fla_12h"] = d.tiled(8).timing.median / statistics.median(d.fla.timing.reps_us)
        if d.fla_96 is not None and d.fla_96.measured:
            out["kda_vs_fla_96h"] = d.tiled(1).timing.median / statistics.median(d.fla_96.timing.reps_us)
    return out


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
