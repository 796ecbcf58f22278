"""kernels/kda_decode.cu's host side: the KDA decode step's geometry, launch and numpy reference.

One build; the body, the launch geometry and the elision mode are chosen at launch by the gates:

    LAUNCHLAB_KDA_BODY      walk (baseline: main's 128-thread kernel, a warp walks its columns one by one)
                            | tuned (default: a warp issues 4 columns' loads at once, block sized to the tile)
    LAUNCHLAB_KDA_VT=0      BV = V: grid = n_head, one block per head       (baseline)
    LAUNCHLAB_KDA_VT=1      BV = 32: grid = (V/32, n_head)                   (default; FLA/vLLM's BV)
    LAUNCHLAB_KDA_ELIDE     store (baseline) | rn (default, byte-identical) | fma (the contraction trap)

`plan` gives the geometry, `step` validates and launches, `reference` is the float64 numpy step, and `Bench`
holds one head count's inputs on the GPU with hot and cold-L2 timing. The §3 lesson is
launchlab.sections.s03_starvation.kda.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from launchlab.core import diagnosis, gates, hardware, launch, loader, mode, occupancy, sources, timing
from launchlab.core import timeline as timeline_mod

FAMILY = "kda_decode"
K = 128                      # the kernel's key width: one float4 per lane of a warp
V = 128
BV_TILED = 32
COLS_PER_WARP = 4
WALK_BLOCK = 128             # main's kernel: a fixed block of 4 warps
MODES = {"store": 0, "rn": 1, "fma": 2}
BODIES = ("walk", "tuned")


class KDAError(launch.LaunchError):
    pass


@dataclass(frozen=True)
class Plan:
    n_head: int
    v: int
    bv: int
    mode: str
    body: str = "tuned"

    @property
    def grid(self) -> tuple[int, int]:
        return (self.v // self.bv, self.n_head)

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def block(self) -> int:
        return WALK_BLOCK if self.body == "walk" else self.bv // COLS_PER_WARP * 32

    @property
    def columns_per_warp(self) -> int:
        """Columns one warp handles: walked one after another (walk) or loaded together (tuned)."""
        return self.bv // (self.block // 32)

    @property
    def expr(self) -> str:
        return f"kda_{'walk' if self.body == 'walk' else 'decode'}<{MODES[self.mode]}>"

    def bytes_moved(self) -> int:
        return bytes_moved(self.n_head, self.v, self.mode)


def geometry(n_head: int, bv: int, mode_: str, body: str = "tuned", gpu="H200") -> diagnosis.Geometry:
    """Where one step's blocks land: its grid, and how many of its blocks one SM holds (the occupancy
    calculator, with the kernel's registers: the loaded kernel's live, the NVRTC compile's in replay)."""
    p = plan(n_head, V, bv, mode_, body)
    regs, smem = loader.resources(FAMILY, p.expr)
    occ = occupancy.occupancy(p.block, regs, smem, gpu)
    return diagnosis.Geometry(p.blocks, hardware.spec(gpu).sm_count, occ.blocks_per_sm)


def bytes_moved(n_head: int, v: int = V, mode_: str = "store") -> int:
    """Global bytes per launch: the state is read and written once, plus (store) the staged product written
    and read back, or (rn/fma) the state read a second time; plus the per-head vectors."""
    state = v * K * 4
    passes = {"store": 4, "rn": 3, "fma": 3}[mode_]
    vectors = (3 * K + 2 * v + 1) * 4
    return n_head * (passes * state + vectors)


def plan(n_head: int, v: int = V, bv: int | None = None, mode_: str | None = None, body: str | None = None) -> Plan:
    if isinstance(n_head, bool) or not isinstance(n_head, (int, np.integer)) or n_head < 1:
        raise KDAError(f"n_head must be a positive integer, got {n_head!r}")
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise KDAError(f"V must be a positive integer, got {v!r}")
    if bv is None:
        bv = BV_TILED if gates.value("KDA_VT") == "1" else v
    mode_ = gates.value("KDA_ELIDE") if mode_ is None else mode_
    body = gates.value("KDA_BODY") if body is None else body
    if body not in BODIES:
        raise KDAError(f"body must be one of {', '.join(BODIES)}, got {body!r}")
    if mode_ not in MODES:
        raise KDAError(f"mode must be one of {', '.join(MODES)}, got {mode_!r}")
    if bv % COLS_PER_WARP or bv < COLS_PER_WARP:
        raise KDAError(f"BV must be a positive multiple of {COLS_PER_WARP} (columns per warp), got {bv}")
    if bv > 32 * COLS_PER_WARP:
        raise KDAError(f"BV = {bv} needs {bv // COLS_PER_WARP * 32} threads per block (tuned) or {bv // 4} "
                       f"columns per warp (walk: a lane keeps one column's d, so at most 32); both bodies' limit "
                       f"is BV <= {32 * COLS_PER_WARP}")
    if v % bv:
        raise KDAError(f"V = {v} is not a multiple of BV = {bv}: value tiles must divide V")
    return Plan(int(n_head), int(v), int(bv), mode_, body)


def validate(q, k, v, g, beta, state, o, n_head: int, v_dim: int) -> None:
    """Refuse bad inputs before any launch: dtypes, K, head counts, sizes, alignment."""
    arrays = dict(q=q, k=k, v=v, g=g, beta=beta, state=state, o=o)
    for name, a in arrays.items():
        if a.dtype != np.float32:
            raise KDAError(f"{name} must be float32, got {a.dtype}")
        if not a.flags.c_contiguous:
            raise KDAError(f"{name} must be contiguous: pass a contiguous copy, e.g. cupy.ascontiguousarray({name})")
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


def step(q, k, v, g, beta, state, o, scratch=None, bv: int | None = None, mode_: str | None = None,
         body: str | None = None, timeline: bool | None = None) -> Plan:
    """One decode step on CuPy arrays, in place on `state`; o receives the output. timeline=True (or
    LAUNCHLAB_TIMELINE=1) launches the instantiation that stamps each block's SM and lifetime; run it inside
    launchlab.core.timeline.capture()."""
    mode.require_live("launching the KDA decode step")
    n_head, v_dim = v.shape
    p = plan(n_head, v_dim, bv, mode_, body)
    expr = p.expr
    if timeline_mod.stamped(FAMILY, timeline):
        expr = p.expr[:-1] + ", true>"
        if expr not in sources.FAMILIES[FAMILY]:
            raise KDAError(f"no block-timeline instantiation of {p.expr} is built (have: "
                           + ", ".join(e for e in sources.FAMILIES[FAMILY] if "true" in e) + ")")
    validate(q, k, v, g, beta, state, o, n_head, v_dim)
    if scratch is None or scratch.size < state.size:
        if p.mode == "store":
            raise KDAError("mode 'store' needs a scratch buffer the size of the state")
        scratch = state           # unused by rn/fma
    loader.kernel(FAMILY, expr).launch(p.grid, p.block, (q, k, v, g, beta, state, scratch, o, np.int32(v_dim)))
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
    """The step on the GPU at one head count, every variant from the same initial state. With cold=True it
    also keeps enough copies of the state (and scratch) that a graph cycling through them finds each copy's
    state outside the L2 (timing.copies_for): the state a real decode step reads, since the whole rest of
    the model ran after this layer's previous call. The per-head vectors stay shared: in a model the kernel
    before this one just wrote them."""

    def __init__(self, n_head: int, v_dim: int = V, seed: int = 0, cold: bool = False):
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
        self.copies: list[tuple] = []
        if cold:
            n = timing.copies_for(self.state0.nbytes, hardware.from_device().l2_bytes)
            self.copies = [(self.state0.copy(), cp.empty_like(self.state0)) for _ in range(n)]

    def run(self, bv=None, mode_=None, body=None, copy: int | None = None):
        state, scratch = (self.state, self.scratch) if copy is None else self.copies[copy]
        return step(self.q, self.k, self.vv, self.g, self.beta, state, self.o, scratch, bv, mode_, body)

    def one_step(self, bv, mode_, body="tuned"):
        """One step from the initial state; returns (o, state) on the host."""
        self.state[...] = self.state0
        self.o.fill(np.nan)
        self.run(bv, mode_, body)
        return self.cp.asnumpy(self.o), self.cp.asnumpy(self.state)

    def time(self, bv=None, mode_=None, body=None, reps: int = 10, launches: int = 100):
        """Per step in a CUDA graph of `launches` steps on one state: hot L2."""
        self.state[...] = self.state0
        return timing.graph(lambda: self.run(bv, mode_, body), launches=launches, reps=reps,
                            label=f"kda H={self.n_head} {body or ''} BV={bv} {mode_} hot")

    def time_cold(self, bv=None, mode_=None, body=None, reps: int = 10):
        """Per step in a CUDA graph cycling through the state copies: cold L2."""
        return timing.replay_cold(self.capture_cold(bv, mode_, body), reps=reps)

    def capture_cold(self, bv=None, mode_=None, body=None) -> "timing.Captured":
        """The cold graph of time_cold, captured and not replayed (kda's contention runs: the background is
        started between the capture and the replays)."""
        if not self.copies:
            raise KDAError("this Bench was built without cold=True: it has no state copies to rotate")
        for s_, _ in self.copies:
            s_[...] = self.state0
        fns = [lambda i=i: self.run(bv, mode_, body, copy=i) for i in range(len(self.copies))]
        return timing.graph_cold_capture(fns, label=f"kda H={self.n_head} {body or ''} BV={bv} {mode_} cold")

    def events(self, bv=None, mode_=None, body=None, reps: int = 200, stream=None):
        """CUDA events around single steps; cold (each step on the next state copy) when the Bench has
        copies, hot (one state) when it has none."""
        self.state[...] = self.state0
        if not self.copies:
            return timing.events(lambda: self.run(bv, mode_, body), reps=reps, warmup=5, stream=stream)
        turn = itertools.cycle(range(len(self.copies)))
        return timing.events(lambda: self.run(bv, mode_, body, copy=next(turn)), reps=reps, warmup=5,
                             stream=stream, l2="cold")
