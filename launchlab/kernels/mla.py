"""§4 / §8: MLA split-KV decode on the GPU (kernels/mla_decode.cu), its float64 reference, and its launch.

One rank's absorbed MLA decode: `n_head` query heads (16 after tp = 8) over one shared latent KV head of
D = 576 (kv_lora 512 + rope 64), a bf16 cache of `ctx` tokens per request. The split count comes from
launchlab.kernels.splits (gate LAUNCHLAB_MLA_FLOOR: derived | hardcoded); the split kernel writes each split's
normalized output and log-sum-exp in fp32, and the combine kernel merges them in split order. The split
kernel's body is a second gate, LAUNCHLAB_MLA_PIPELINE: `off` loads a 64-token tile and then computes on it;
`cp.async` double-buffers 32-token tiles so a block's next load is in flight while it computes.

bf16 arrays are carried as their 16 bits (numpy uint16): `to_bf16` rounds float32 to nearest even exactly as
the kernel's conversion does, `from_bf16` widens exactly, and the reference works in float64 on those values.
`error_bound` is a proven bound on how far the kernel may land from that reference (§8).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from launchlab.core import gates, hardware, launch, loader, mode, occupancy
from launchlab.kernels import splits

FAMILY = "mla_decode"
D, DV, HEAD_TILE, BLOCK = 576, 512, 16, 128
COMBINE_COLS, COMBINE_BLOCK = 32, 256            # kernels/mla_decode.cu: 8 warps over 32 columns
# LAUNCHLAB_MLA_PIPELINE arm -> (kernel, tokens per tile, stages): kernels/mla_decode.cu's two bodies
BODIES = {"off": ("mla_split", 64, 1), "cp.async": ("mla_split_pipe", 32, 2), "cp.async-3": ("mla_split_deep", 32, 3)}
U32 = 2.0 ** -24          # unit roundoff of fp32 (round to nearest)
U_BF16 = 2.0 ** -8        # unit roundoff of bf16: 8 significand bits (7 stored), round to nearest: |bf16(x) - x| <= 2^-8 |x|
SKIP_MIN_CTX = 16_384    # §8: the approximation engages only past this many tokens (byte-inert at or below)
SKIP_WEIGHT = 1e-5       # §8: a split whose combine weight exp(lse_s - max lse) is below this is dropped
BOOST_GHZ = 1.98          # the H200 SXM's boost clock (NVIDIA's data sheet), for the arithmetic floors


class MLAError(launch.LaunchError):
    pass


# ------------------------------------------------------------------ bf16 bits
def to_bf16(x, chunk: int = 1 << 18) -> np.ndarray:
    """float32 -> bf16 bits, round to nearest even (finite inputs). In uint32: the largest finite float's bits
    plus the rounding increment stay below 2^32 (0xFF7FFFFF + 0x8000), so nothing wraps. Worked a chunk at a
    time in one reused buffer, so the temporaries stay in cache: on a 131,072-token latent (75 M values) the
    whole-array form took 1.3 s here and this 0.04 s (docs/notes/reading-and-pacing.md)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).reshape(-1)
    out = np.empty(u.size, np.uint16)
    r = np.empty(min(chunk, u.size), np.uint32)
    for i in range(0, u.size, chunk):
        c = u[i:i + chunk]
        t = r[:c.size]
        np.right_shift(c, 16, out=t)
        t &= 1
        t += c
        t += 0x7FFF
        t >>= 16
        out[i:i + chunk] = t
    return out.reshape(np.shape(x))


def from_bf16(b) -> np.ndarray:
    """bf16 bits -> float32, exactly."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# ------------------------------------------------------------------ reference and inputs
def _scores(q64, kv64, scale):
    """(batch, heads, tokens) scores in float64, by BLAS (matmul): np.einsum's own loop took 20x longer at
    131,072 tokens, which the live sections paid once per reference and twice per error bound."""
    return np.matmul(q64, kv64.transpose(0, 2, 1)) * scale


def reference(q_bf16, kv_bf16, scale: float) -> np.ndarray:
    """float64 reference: softmax(scale * q . kv) over tokens, times the first 512 channels of kv.
    q: (batch, n_head, 576) bf16 bits; kv: (batch, ctx, 576) bf16 bits -> (batch, n_head, 512) float64."""
    q = from_bf16(q_bf16).astype(np.float64)
    kv = from_bf16(kv_bf16).astype(np.float64)
    s = _scores(q, kv, scale)
    s -= s.max(axis=2, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=2, keepdims=True)
    return np.matmul(p, kv[:, :, :DV])


def inputs(batch: int, n_head: int, ctx: int, seed: int = 0) -> dict:
    """Random decode inputs at realistic scale (bf16 bits): latent entries ~ N(0, 576^-1/2), q the same, so a
    score q.kv has unit variance before the softmax scale 576^-1/2. Filled as if prefilled: no model here."""
    r = np.random.default_rng([seed, batch, n_head, ctx])
    q = r.standard_normal((batch, n_head, D), dtype=np.float32) * D ** -0.25
    kv = r.standard_normal((batch, ctx, D), dtype=np.float32)
    kv *= D ** -0.25                                   # in place: at 131,072 tokens the latent is 300 MB
    return {"q": to_bf16(q), "kv": to_bf16(kv), "scale": float(D ** -0.5)}


def inputs_recent(batch: int, n_head: int, ctx: int, recent: int = 2048, lift: float = 14.0, seed: int = 0) -> dict:
    """Inputs where attention concentrates on the last `recent` tokens, as it often does in decoding: the
    heads' queries share a direction u (norm 24 = 1 / scale), and the recent rows carry `lift` x u, so their
    scores sit about `lift` above the rest. Splits over old tokens then weigh about e^-lift in the combine:
    what §8's approximation drops."""
    r = np.random.default_rng([seed, batch, n_head, ctx, recent])
    u = r.standard_normal(D)
    u /= np.linalg.norm(u)
    z = r.standard_normal((batch, n_head, D))
    z /= np.linalg.norm(z, axis=2, keepdims=True)
    qh = u + 0.3 * z
    qh *= D ** 0.5 / np.linalg.norm(qh, axis=2, keepdims=True)
    kv = r.standard_normal((batch, ctx, D), dtype=np.float32)
    kv *= D ** -0.25
    kv[:, max(0, ctx - recent):, :] += (lift * u).astype(np.float32)
    return {"q": to_bf16(qh.astype(np.float32)), "kv": to_bf16(kv), "scale": float(D ** -0.5)}


# ------------------------------------------------------------------ the launch plan
def smem_bytes(pipeline: str) -> int:
    """Dynamic shared memory of one split block (kernels/mla_decode.cu, struct Smem): the cache stages, the
    Q tile, P and the cross-warp scratch."""
    _, tt, stages = BODIES[pipeline]
    return stages * tt * (D + 8) * 2 + HEAD_TILE * (D + 8) * 2 + HEAD_TILE * (tt + 8) * 2 + 4 * HEAD_TILE * 4


def smem_for_residency(blocks_per_sm: int, gpu="H200") -> int:
    """The least dynamic shared memory per block that lets at most `blocks_per_sm` blocks share an SM: how
    the course pins residency without touching the kernel (§4: is the second block per SM what matters?)."""
    s = hardware.spec(gpu)
    return s.smem_per_sm // (blocks_per_sm + 1) - s.reserved_smem_per_block + 16


@dataclass(frozen=True)
class Plan:
    """Everything one MLA decode launch decides before it launches."""
    split: splits.Split
    pipeline: str
    smem: int                       # dynamic shared memory asked per split block
    registers: int                  # of the split kernel (the loaded kernel, or ptxas offline)
    occupancy: occupancy.Occupancy  # the course's calculator at this block, registers and shared memory

    @property
    def kernel(self) -> str:
        return BODIES[self.pipeline][0]

    @property
    def tile_tokens(self) -> int:
        return BODIES[self.pipeline][1]

    @property
    def grid(self) -> tuple[int, int, int]:
        return (self.split.splits, self.split.head_tiles, self.split.batch)

    @property
    def blocks_per_sm(self) -> int:
        return self.occupancy.blocks_per_sm

    @property
    def combine_grid(self) -> tuple[int, int, int]:
        return (DV // COMBINE_COLS, self.split.n_head, self.split.batch)

    def bytes_moved(self) -> int:
        """DRAM bytes of one decode step: the cache once, q, and the splits' outputs and LSEs written and read
        back by the combine, and the output."""
        s = self.split
        scratch = s.batch * s.splits * s.n_head * (DV + 1) * 4
        return s.batch * s.ctx * D * 2 + s.batch * s.n_head * D * 2 + 2 * scratch + s.batch * s.n_head * DV * 4

    def describe(self) -> str:
        return (f"{self.split.describe()}; body {self.pipeline!r} ({self.kernel}, {self.tile_tokens}-token tiles), "
                f"{self.registers} regs, {self.smem:,} B shared -> {self.blocks_per_sm} block(s)/SM "
                f"(limited by {' and '.join(self.occupancy.limiter)})")


def _registers(name: str) -> int:
    return mode.choose(live=lambda: loader.kernel(FAMILY, name).registers,
                       replay=lambda: loader.compiled_resources(FAMILY, name)[0].registers)


def plan(batch: int, n_head: int, ctx: int, floor: str | None = None, pipeline: str | None = None, *,
         n_splits: int | None = None, slice_tokens: int | None = None, resident: int | None = None,
         gpu="H200") -> Plan:
    """The launch a decode of this shape makes: the split count (the floor gate, or one given outright with
    n_splits / slice_tokens), the body (the pipeline gate) and, with `resident`, shared memory padded so at
    most that many blocks share an SM."""
    floor = gates.value("MLA_FLOOR") if floor is None else floor
    pipeline = gates.value("MLA_PIPELINE") if pipeline is None else pipeline
    if pipeline not in BODIES:
        raise MLAError(f"pipeline must be one of {', '.join(BODIES)}, got {pipeline!r}")
    regs = _registers(BODIES[pipeline][0])
    key = (batch, n_head, ctx, floor, pipeline, n_splits, slice_tokens, resident, gpu, regs)
    if all(type(v) is int for v in (batch, n_head, ctx)) and all(v is None or type(v) is int
                                                                 for v in (n_splits, slice_tokens, resident)) \
            and type(gpu) is str:
        return _plan(*key)            # a decode step plans every MLA layer again: the same answer, remembered
    return _plan.__wrapped__(*key)    # anything else (a NumPy int, a bool, a GPU spec object) is checked afresh


@lru_cache(maxsize=4096)
def _plan(batch, n_head, ctx, floor, pipeline, n_splits, slice_tokens, resident, gpu, regs) -> Plan:
    """plan()'s arithmetic, a pure function of its arguments (the gates and the kernel's registers resolved)."""
    try:
        if n_splits is not None or slice_tokens is not None:
            sp = splits.forced(ctx, n_head, batch, splits=n_splits, slice_tokens=slice_tokens, gpu=gpu)
        else:
            sp = splits.split(ctx, n_head, batch, floor, gpu)
    except splits.SplitError as e:
        raise MLAError(str(e)) from None
    smem = smem_bytes(pipeline)
    if resident is not None:
        if resident not in (1, 2) or resident > occupancy.occupancy(BLOCK, regs, smem_bytes(pipeline), gpu).blocks_per_sm:
            raise MLAError(f"resident must be 1 or 2 blocks per SM, and at most what body {pipeline!r} allows; "
                           f"got {resident!r}")
        smem = max(smem, smem_for_residency(resident, gpu))
    occ = occupancy.occupancy(BLOCK, regs, smem, gpu)
    if resident is not None and occ.blocks_per_sm != resident:
        raise MLAError(f"padding shared memory to {smem} B gives {occ.blocks_per_sm} blocks/SM, not {resident}")
    return Plan(sp, pipeline, smem, regs, occ)


def validate(q, kv) -> tuple[int, int, int]:
    """(batch, n_head, ctx), or a clear error before any launch."""
    for name, a in (("q", q), ("kv", kv)):
        if getattr(a, "dtype", None) != np.uint16:
            raise MLAError(f"{name} must hold bf16 bits (uint16), got {getattr(a, 'dtype', type(a).__name__)}: "
                           f"convert with launchlab.kernels.mla.to_bf16")
        if a.ndim != 3 or a.shape[2] != D:
            raise MLAError(f"{name} must be (batch, rows, {D}), got {a.shape}")
        if not a.flags.c_contiguous:
            raise MLAError(f"{name} must be contiguous (got a strided view): pass a copy")
        if not launch.aligned16(a):
            raise MLAError(f"{name} must start on a 16-byte boundary (the kernel copies 16 bytes at a time): "
                           f"pass a copy, not an offset view")
    if q.shape[0] != kv.shape[0]:
        raise MLAError(f"q has {q.shape[0]} requests, kv {kv.shape[0]}")
    if kv.shape[1] < 1:
        raise MLAError("the context is empty (ctx = 0): nothing to attend to")
    if q.shape[1] < 1:
        raise MLAError("no query heads (n_head = 0)")
    return q.shape[0], q.shape[1], kv.shape[1]


class Decoder:
    """One shape's decode with its scratch allocated once: calling it launches split + combine (what a CUDA
    graph captures for timing). Inputs are checked, and the plan made, before anything launches."""

    def __init__(self, q, kv, scale: float, p: Plan | None = None, skip: str | None = None, scratch=None,
                 **plan_kw):
        """scratch: an optional Scratch to carve o_split / lse / out from (a decode step shares one across its
        layers, so its launches allocate nothing: what a CUDA graph capture needs)."""
        mode.require_live("launching the MLA decode")
        if not hasattr(q, "data") or not hasattr(q, "device") or type(q).__module__.split(".")[0] != "cupy":
            raise MLAError("q and kv must be CuPy arrays on the GPU (cupy.asarray(...) them)")
        import cupy as cp
        batch, n_head, ctx = validate(q, kv)
        self.plan = p or plan(batch, n_head, ctx, **plan_kw)
        s = self.plan.split
        if (s.batch, s.n_head, s.ctx) != (batch, n_head, ctx):
            raise MLAError(f"the plan is for {s.batch} x {s.n_head} heads x {s.ctx} tokens, the inputs are "
                           f"{batch} x {n_head} x {ctx}")
        self.q, self.kv, self.scale = q, kv, float(scale)
        self.skip = gates.value("MLA_SKIP") if skip is None else skip
        if self.skip not in ("off", "on"):
            raise MLAError(f"skip must be 'off' or 'on', got {self.skip!r}")
        self.drop_below = drop_threshold(ctx, self.skip)
        shapes = ((batch, s.splits, n_head, DV), (batch, s.splits, n_head), (batch, n_head, DV))
        if scratch is None:
            self.o_split, self.lse, self.out = (cp.empty(sh, dtype=cp.float32) for sh in shapes)
        else:
            self.o_split, self.lse, self.out = scratch.carve(shapes)
        self._split = loader.kernel(FAMILY, self.plan.kernel)
        self._combine = loader.kernel(FAMILY, "mla_combine")

    def split(self):
        p, s = self.plan, self.plan.split
        self._split.launch(p.grid, BLOCK, (self.q, self.kv, self.o_split, self.lse, np.int32(s.n_head),
                                           np.int32(s.ctx), np.int32(s.slice_tokens), np.float32(self.scale)),
                           smem=p.smem)

    def combine(self):
        p, s = self.plan, self.plan.split
        self._combine.launch(p.combine_grid, COMBINE_BLOCK, (self.o_split, self.lse, self.out, np.int32(s.n_head),
                                                            np.int32(s.splits), np.float32(self.drop_below)))
        return self.out

    def __call__(self):
        self.split()
        return self.combine()


class Scratch:
    """fp32 scratch for split outputs, LSEs and the output, sized for `n_head` heads, `batch` requests and up to
    MAX_SPLITS splits; Decoder views carve contiguous prefixes of it."""

    def __init__(self, n_head: int, batch: int = 1):
        import cupy as cp
        self.n_head, self.batch = n_head, batch
        self.bufs = [cp.empty(batch * splits.MAX_SPLITS * n_head * DV, dtype=cp.float32),
                     cp.empty(batch * splits.MAX_SPLITS * n_head, dtype=cp.float32),
                     cp.empty(batch * n_head * DV, dtype=cp.float32)]

    def carve(self, shapes):
        out = []
        for buf, sh in zip(self.bufs, shapes):
            n = int(np.prod(sh))
            if n > buf.size:
                raise MLAError(f"scratch of {buf.size} floats cannot hold {sh}")
            out.append(buf[:n].reshape(sh))
        return out


def drop_threshold(ctx: int, skip: str) -> float:
    """The combine's drop threshold: SKIP_WEIGHT past SKIP_MIN_CTX tokens with the gate on, else 0 (exact)."""
    return SKIP_WEIGHT if skip == "on" and ctx > SKIP_MIN_CTX else 0.0


def decode(q, kv, scale: float, floor: str | None = None, pipeline: str | None = None, skip: str | None = None,
           **plan_kw):
    """One decode step on CuPy arrays: split kernel, then combine. Returns (out fp32, the Plan it used)."""
    dec = Decoder(q, kv, scale, skip=skip, floor=floor, pipeline=pipeline, **plan_kw)
    return dec(), dec.plan


# ------------------------------------------------------------------ floors and the error bound
@dataclass(frozen=True)
class Floors:
    """The floors of one decode at a shape, in µs (and the cache's bytes)."""
    cache_bytes: int
    memory_us: float            # the cache's bytes at the copy ceiling
    fp32_cuda_core_us: float    # the multiply-adds on CUDA cores in fp32
    bf16_tensor_core_us: float  # the multiply-adds at the bf16 tensor cores' dense peak


def floors(ctx: int, n_head: int = 16, batch: int = 1, copy_tbs: float = 4.24, gpu="H200") -> Floors:
    """The two floors of one decode at this shape: memory (the cache's bytes at the copy ceiling) and
    arithmetic (n_head x (576 + 512) multiply-adds per token) on CUDA cores in fp32 and at the bf16 tensor
    cores' dense peak (mma.sync reaches only part of that peak; the floor is what no kernel beats)."""
    s = hardware.spec(gpu)
    fma = batch * ctx * n_head * (D + DV)
    cuda_core_fma_s = s.sm_count * 128 * BOOST_GHZ * 1e9            # 128 fp32 FMA per SM per clock (sm_90)
    tensor_fma_s = s.sm_count * 2048 * BOOST_GHZ * 1e9              # dense bf16 peak (989 TFLOPS): 2048 FMA/SM/clk
    cache = batch * ctx * D * 2
    return Floors(cache, cache / (copy_tbs * 1e12) * 1e6, fma / cuda_core_fma_s * 1e6, fma / tensor_fma_s * 1e6)


def error_bound(q_bf16, kv_bf16, scale: float, p: Plan, terms: "BoundTerms | None" = None) -> np.ndarray:
    """A bound on |kernel - float64 reference| for every output element, proven for this kernel (§8).

    Write w_t for the exact softmax weights and v_t for the latent rows. The kernel's weight of token t is
    p̂_t = bf16(exp2(ŝ_t - m)), so p̂_t = exp(s_t - m) (1 + δ_t) with |δ_t| <= ρ where ρ gathers
      - the score: 576 products (exact in fp32) summed on tensor cores, counted as <= 2u per addition, so the
        exponent is off by at most 1152 u · scale · Σ|q_d kv_td|, plus 4 u (|s_t| + max|s|) for the scale,
        the subtraction of the running max and the exp2 argument;
      - exp2's approximation (<= 2 ulp) and the bf16 rounding of P (<= 2^-8, bf16's unit roundoff).
    Normalizing by Σ p̂ (the kernel sums exactly the bf16 values P V uses) turns weight errors into
    |ŵ_t - w_t| <= w_t · 2ρ / (1 - ρ). The sums add rounding: P V over a slice of L tokens and the running
    sum (2u per addition, L additions, plus one rescale per tile), and the combine over S splits (weights
    exp(lse - max) with lse's own rounding, S additions, one division). Each of these is relative to
    Σ_t w_t |v_tc| (times (1 + ρ)/(1 - ρ) for the perturbed weights), so

        |o_c - ref_c| <= [2ρ / (1 - ρ) + (1 + ρ)/(1 - ρ) · 2u (2L + L/TT + 2S + 6 + 4 max|lse|)] · Σ_t w_t |v_tc|

    The measured error sits far below it (bf16 roundings of P are unbiased and average out over tokens); the
    point is that every split count lands inside the same proven envelope. Everything but L, S and TT depends on
    the inputs alone: pass `terms` (bound_terms) to bound several plans of the same inputs at the cost of one."""
    t = terms or bound_terms(q_bf16, kv_bf16, scale)
    sp = p.split
    L, S, tt = sp.slice_tokens, sp.splits, p.tile_tokens
    acc = 2 * U32 * (2 * L + L / tt + 2 * S + 6 + 4 * t.big)
    beta = 2 * t.rho / (1 - t.rho) + (1 + t.rho) / (1 - t.rho) * acc
    return beta * t.mag


@dataclass(frozen=True)
class BoundTerms:
    """The parts of error_bound that depend on the inputs only (not on the split plan)."""
    rho: float              # the largest relative error of one kernel weight p̂_t
    big: float              # max |lse| + max |s|
    mag: np.ndarray         # Σ_t w_t |v_tc|, (batch, heads, 512)


def bound_terms(q_bf16, kv_bf16, scale: float) -> BoundTerms:
    q = from_bf16(q_bf16).astype(np.float64)
    kv = from_bf16(kv_bf16).astype(np.float64)
    s = _scores(q, kv, scale)                                          # (b, h, t) natural units
    absdot = _scores(np.abs(q), np.abs(kv), scale)
    smax = np.abs(s).max(axis=2, keepdims=True)
    u = U32
    expo = 1152 * u * absdot + 4 * u * (np.abs(s) + smax)
    rho = float(np.max(np.expm1(expo) * (1 + 2 * u) * (1 + U_BF16) + 2 * u + U_BF16))
    w = np.exp(s - s.max(axis=2, keepdims=True))
    w /= w.sum(axis=2, keepdims=True)
    mag = np.matmul(w, np.abs(kv[:, :, :DV]))                          # Σ_t w_t |v_tc|
    lse = np.log(np.exp(s - s.max(axis=2, keepdims=True)).sum(axis=2)) + s.max(axis=2)
    big = float(np.max(np.abs(lse))) + float(np.max(smax))
    return BoundTerms(rho, big, mag)


def max_error_over_bound(out, ref, bound) -> float:
    """max |out - ref| / bound over the elements: at most 1 if the bound holds."""
    return float(np.max(np.abs(np.asarray(out, np.float64) - ref) / bound))
