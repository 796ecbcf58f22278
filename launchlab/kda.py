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

from dataclasses import dataclass

import numpy as np

from . import gates, kernels, launch, mode

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
        a = arrays[name]
        ptr = a.data.ptr if hasattr(a.data, "ptr") else a.ctypes.data
        if ptr % 16:
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
        from . import timing
        self.state[...] = self.state0
        return timing.graph(lambda: self.run(bv, mode_), launches=launches, reps=reps,
                            label=f"kda H={self.n_head} BV={bv} {mode_}")

    def events(self, bv=None, mode_=None, reps: int = 200, stream=None):
        from . import timing
        self.state[...] = self.state0
        return timing.events(lambda: self.run(bv, mode_), reps=reps, warmup=5, stream=stream)


def compare(n_head: int = 12, v_dim: int = V, seed: int = 0) -> dict:
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
    res = {"n_head": n_head, "V": v_dim, "seed": seed, "variants": {}}
    for (bv, m), (o, s) in out.items():
        diff_o = int(np.sum(o.view(np.uint32) != base_o.view(np.uint32)))
        diff_s = int(np.sum(s.view(np.uint32) != base_s.view(np.uint32)))
        res["variants"][f"BV={bv} {m}"] = {
            "bv": bv, "mode": m, "identical_to_baseline": same((o, s), (base_o, base_s)),
            "o_elements_differing": diff_o, "state_elements_differing": diff_s,
            "rel_err_o": rel_err(o, ref_o), "rel_err_state": rel_err(s, ref_s)}
    return res


def contention(n_head: int = 12, reps: int = 300, seed: int = 0) -> dict:
    """The tiled step timed alone, then while another stream runs a bandwidth-hungry streaming read (one
    256-thread block per SM, so SM slots stay free and the two kernels contend for bandwidth)."""
    from . import bandwidth
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
    return {"alone": alone.to_dict(), "contended": contended.to_dict(), "background": {
        "kernel": "stream_read<4,4>, grid 132 x block 256, 1 GiB per launch", "launches": n_reads,
        "per_launch_us": per_read_us, "still_running_at_end": bool(still_running)}}


def fla_peer(n_head: int = 12, launches: int = 100, reps: int = 10, seed: int = 0) -> dict:
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
    return {"timing": {"reps_us": times, "method": "graph", "launches_per_rep": launches,
                       "label": "FLA fused_recurrent_kda_fwd"},
            "version": getattr(fla, "__version__", "?"), "rel_err_o": err_o, "rel_err_state": err_s,
            "call": "fused_recurrent_kda_fwd(q, k, v, g, beta, initial_state, scale=1.0, "
                    "inplace_final_state=True, state_v_first=True)"}


# ------------------------------------------------------------------ replay
def recorded() -> dict:
    from . import recordings
    r = recordings.load("section03")
    return dict(r.data, source=r.describe())


def measured() -> dict:
    """Live mode: the §3 measurements the notebooks show, made now."""
    from . import recorder
    return dict(recorder.record_section03(), source="live")


def sweep_point(data: dict, tp: int, bv: int, mode_: str):
    from . import timing
    for r in data["sweep"]:
        if (r["tp"], r["bv"], r["mode"]) == (tp, bv, mode_):
            return r, timing.Timing.from_dict(r["timing"])
    raise KeyError(f"no sweep point tp={tp} BV={bv} {mode_}")
