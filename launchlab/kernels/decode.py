"""The decode step: one rank of a hybrid linear-attention model at the lecture's per-rank shapes (tp = 8).

No model is ever downloaded: the weights are random from a fixed seed, drawn on the GPU. The shapes are the
lecture's per-rank ones:

    hidden 7168; KDA layers: 12 heads, K = V = 128 (launchlab.sections.s03_starvation.kda); MLA layers: 16 heads over the 576-wide
    bf16 latent cache, split-KV decode + combine (launchlab.kernels.mla); a dense MLP shard per layer (intermediate
    2304 = 18432 / 8) through cuBLAS in bf16 with fp32 accumulation; a vocab shard of 20480 for the logits;
    greedy next token.

The layer pattern alternates MLA and KDA, starting and ending with MLA: at the full depth of 93 layers that is
47 MLA + 46 KDA layers, and the step launches exactly 327 RMS norms per token (the lecture's title):

    KDA layer  3 norms: input, the output norm over the heads (one launch, 12 rows), post-attention
    MLA layer  4 norms: input, q_a (1536), kv_a (the 512 latent channels), post-attention
    final      1 norm before the logits                      46 x 3 + 47 x 4 + 1 = 327

The context is synthetic: the MLA caches and KDA states are filled with random values of realistic scale as
if a prompt of `ctx` tokens had been prefilled (no prefill is run), then each decode step appends to them.
Every course kernel launch goes through loader.Kernel.launch (the launch check; the occupancy calculator
reads the same geometry) on the decode chain's path (launchlab.core.pdl: cuLaunchKernelEx with programmatic
dependent launch, LAUNCHLAB_PDL); the projections are cuBLAS GEMMs (cublasGemmEx, bf16 in, fp32 out).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from launchlab.core import dumps, gates, launch, loader, mode, pdl, slices, stepgraph, timing
from launchlab.kernels import kda_decode, mla, residual_add, rms_norm

FAMILY = "decode_ops"
FULL_LAYERS = 93
# What Model.overrides may set (the lab's sweeps of the offenders' geometry); None or absent: the gates decide.
OVERRIDES = {"rms_block": "threads per block of the hidden-width norms (the widened kernel, 128..1024)",
             "kda_bv": "the KDA step's value tile BV (grid = V / BV x heads)",
             "mla_splits": "the MLA decode's split count (grid = splits x head tiles)"}


class DecodeError(ValueError):
    pass


@dataclass(frozen=True)
class Config:
    layers: int = FULL_LAYERS
    hidden: int = 7168
    kda_heads: int = 12
    kda_dim: int = 128                  # K = V
    mla_heads: int = 16
    q_lora: int = 1536
    kv_lora: int = 512
    rope: int = 64
    v_head: int = 128                   # MLA value head dim after W_UV
    mlp_inter: int = 2304
    vocab: int = 20480
    eps: float = 1e-6
    seed: int = 0

    def __post_init__(self):
        if isinstance(self.layers, bool) or not isinstance(self.layers, int) or self.layers < 1:
            raise DecodeError(f"layers must be a positive integer, got {self.layers!r}")

    def kind(self, i: int) -> str:
        """Layer i's attention: MLA on even layers, KDA on odd ones."""
        return "mla" if i % 2 == 0 else "kda"

    @property
    def kinds(self) -> list[str]:
        return [self.kind(i) for i in range(self.layers)]

    @property
    def norms_per_token(self) -> int:
        return sum(4 if k == "mla" else 3 for k in self.kinds) + 1

    @property
    def kda_proj(self) -> int:
        """The KDA input projection's width: q, k, v, g (12 x 128 each) and beta (12)."""
        return 4 * self.kda_heads * self.kda_dim + self.kda_heads


# ------------------------------------------------------------------ cuBLAS: bf16 GEMM with fp32 output
CUDA_R_32F, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT, OP_N = 0, 14, 68, -1, 0
_ONE, _ZERO = np.ones(1, np.float32), np.zeros(1, np.float32)
WORKSPACE_BYTES = 32 << 20


def _loaded_libcublas() -> str:
    """The libcublas this process has loaded (CuPy's), from /proc/self/maps: calling another copy with CuPy's
    handle would mix two libraries' state."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if line.strip() else ""
            if "/libcublas.so" in path:
                return path
    raise DecodeError("libcublas is not loaded in this process (CuPy creates its handle first)")


class _Cublas:
    """cublasGemmEx and cublasGemmStridedBatchedEx called directly, on CuPy's handle, so that they can be
    captured into a CUDA graph: CuPy's own wrappers refuse any cuBLAS call during stream capture, while cuBLAS
    itself supports capture once it has a fixed workspace (set here, once) and the capturing stream."""

    _it = None

    def __init__(self):
        import ctypes

        import cupy as cp
        self.handle = cp.cuda.device.get_cublas_handle()
        self.lib = ctypes.CDLL(_loaded_libcublas())
        # zeroed once, so no read of it is ever of uninitialized memory: initcheck's reports inside cuBLASLt's
        # split-K reduce on the decode token remain with it zeroed, so they are not reads of this workspace
        # (data/sanitizer/, tools/sanitize_sweep.py)
        self.ws = cp.zeros(WORKSPACE_BYTES, dtype=cp.uint8)
        self.one, self.zero = _ONE.ctypes.data, _ZERO.ctypes.data     # host scalars alpha, beta (module-lived)
        c = ctypes
        self.lib.cublasSetStream_v2.argtypes = [c.c_void_p, c.c_void_p]
        self.lib.cublasSetWorkspace_v2.argtypes = [c.c_void_p, c.c_void_p, c.c_size_t]
        i, p = c.c_int, c.c_void_p
        self.lib.cublasGemmEx.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
        self.lib.cublasGemmStridedBatchedEx.argtypes = [p, i, i, i, i, i, p, p, i, i, c.c_longlong, p, i, i,
                                                        c.c_longlong, p, p, i, i, c.c_longlong, i, i, i]
        self._ok(self.lib.cublasSetWorkspace_v2(self.handle, self.ws.data.ptr, self.ws.nbytes), "SetWorkspace")

    @classmethod
    def get(cls) -> "_Cublas":
        if cls._it is None:
            cls._it = cls()
        return cls._it

    @staticmethod
    def _ok(status: int, what: str) -> None:
        if status != 0:
            raise DecodeError(f"cublas{what} returned status {status}")

    def _stream(self):
        """The current stream, and the course's workspace again: cublasSetStream resets the handle's workspace
        to cuBLAS's default pool, which allocates stream-ordered inside a capture (docs/notes/step-graph.md)."""
        import cupy as cp
        self._ok(self.lib.cublasSetStream_v2(self.handle, cp.cuda.get_current_stream().ptr), "SetStream")
        self._ok(self.lib.cublasSetWorkspace_v2(self.handle, self.ws.data.ptr, self.ws.nbytes), "SetWorkspace")

    def gemv(self, x, w, y) -> None:
        k, n = w.shape
        self._stream()
        self._ok(self.lib.cublasGemmEx(self.handle, OP_N, OP_N, n, 1, k, self.one, w.data.ptr,
                                       CUDA_R_16BF, n, x.data.ptr, CUDA_R_16BF, k, self.zero, y.data.ptr,
                                       CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT), "GemmEx")

    def gemv_batched(self, x, w, y) -> None:
        b, k, n = w.shape
        self._stream()
        self._ok(self.lib.cublasGemmStridedBatchedEx(self.handle, OP_N, OP_N, n, 1, k, self.one,
                                                     w.data.ptr, CUDA_R_16BF, n, k * n, x.data.ptr, CUDA_R_16BF,
                                                     k, k, self.zero, y.data.ptr, CUDA_R_32F, n, n, b,
                                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "GemmStridedBatchedEx")


def _check_gemv(x, w, y) -> None:
    k, n = w.shape[-2:]
    if (x.size != k * (w.size // (k * n)) or y.size != n * (w.size // (k * n)) or x.dtype != np.uint16
            or w.dtype != np.uint16 or y.dtype != np.float32):
        raise DecodeError(f"gemv: x {x.dtype}{x.shape}, w {w.dtype}{w.shape}, y {y.dtype}{y.shape}")


def gemv_bf16(x, w, y) -> None:
    """y (fp32, N) = x (bf16 bits, K) @ w (bf16 bits, K x N row-major), on the current stream, by cuBLAS
    (column-major: y^T = w^T x^T, so w is an N x K matrix with leading dimension N)."""
    _check_gemv(x, w, y)
    _Cublas.get().gemv(x, w, y)


def gemv_bf16_batched(x, w, y) -> None:
    """Per head b: y[b] (fp32, N) = x[b] (bf16, K) @ w[b] (bf16, K x N), one strided-batched cuBLAS call."""
    _check_gemv(x, w, y)
    _Cublas.get().gemv_batched(x, w, y)


# ------------------------------------------------------------------ numpy references of the glue kernels
def to_bf16_ref(x) -> np.ndarray:
    return mla.to_bf16(np.asarray(x, np.float32))


@functools.cache
def _scaled_bf16_kernel():
    import cupy as cp
    return cp.ElementwiseKernel(
        "float32 x, float32 s", "uint16 y",
        "unsigned int u = __float_as_uint(x * s); y = (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16)",
        "launchlab_scaled_bf16")


def scaled_bf16(x, scale: float):
    """bf16 bits (round to nearest even) of x * scale in float32, for a CuPy float32 array: one fused elementwise
    pass (build() rounds ~560 weight tensors; as separate CuPy operations each took six passes and five
    temporaries). Bit for bit to_bf16_ref(x * np.float32(scale)) (tests/test_decode.py)."""
    return _scaled_bf16_kernel()(x, np.float32(scale))


def silu_mul_ref(gu: np.ndarray, inter: int) -> np.ndarray:
    g, u = gu[:inter].astype(np.float64), gu[inter:].astype(np.float64)
    return g / (1 + np.exp(-g)) * u


def kda_prep_ref(proj: np.ndarray, n_head: int, dim: int = 128) -> dict:
    p = proj.astype(np.float64)
    hk = n_head * dim
    q, k = p[:hk].reshape(n_head, dim), p[hk:2 * hk].reshape(n_head, dim)
    q = q / np.sqrt((q * q).sum(1, keepdims=True) + 1e-6) * dim ** -0.5
    k = k / np.sqrt((k * k).sum(1, keepdims=True) + 1e-6)
    return {"q": q, "k": k, "v": p[2 * hk:3 * hk].reshape(n_head, dim),
            "g": -np.logaddexp(0, p[3 * hk:4 * hk]).reshape(n_head, dim),
            "beta": 1 / (1 + np.exp(-p[4 * hk:4 * hk + n_head]))}


def rope_ref(row: np.ndarray, pos: int) -> np.ndarray:
    """RoPE on channels 512..575 of a 576 row: pairs (512 + i, 544 + i) rotated by pos x 10000^(-i/32).
    The kernel forms the angle in fp32 (as fp32 RoPE does everywhere): off by up to about 3 x 2^-24 x pos
    radians, 1e-4 rad at position 1,000 and 1e-2 rad at 70,000 -- see rope_angle_error."""
    r = row.astype(np.float64).copy()
    theta = pos * 10000.0 ** (-np.arange(32) / 32)
    x0, x1 = r[512:544].copy(), r[544:576].copy()
    r[512:544], r[544:576] = x0 * np.cos(theta) - x1 * np.sin(theta), x0 * np.sin(theta) + x1 * np.cos(theta)
    return r


def rope_angle_error(pos: int) -> float:
    """A bound on the kernel's angle error in radians: exp2f (2 ulp) and the fp32 product (1 ulp) relative
    to an angle of at most pos radians, plus sincosf's own error."""
    return 3 * 2.0 ** -24 * pos + 1e-6


# ------------------------------------------------------------------ the model on the GPU
def _on_the_chain(fn):
    """Run `fn` with every launch it makes on the decode chain's path (launchlab.core.pdl.chain), the gates read
    once for the whole step (gates.steady: a step asks them ~3,900 times)."""
    @functools.wraps(fn)
    def on_chain(*args, **kwargs):
        with pdl.chain(), gates.steady():
            return fn(*args, **kwargs)
    return on_chain


@dataclass
class Launch:
    """One launch of the step, as the profile lists it."""
    site: str                 # where in the model: "L3.mla.split", "final.norm", ...
    kernel: str               # family:expression, or "cublas:gemmEx"
    grid: tuple
    block: int
    layer: int                # -1 outside the layers
    smem: int = 0             # dynamic shared memory

    @property
    def role(self) -> str:
        """The site without its layer: "kda.prep", "mla.split", "post_norm"..."""
        return self.site.split(".", 1)[1] if self.site.startswith("L") and "." in self.site else self.site


@dataclass
class Model:
    cfg: Config
    ctx: int
    capacity: int
    w: dict = field(repr=False)
    state: dict = field(repr=False)
    buf: dict = field(repr=False)
    log: list[Launch] | None = None
    timer: list | None = None           # while profiling: (site, start, end) eager, or (site, mark) in a graph
    marks: bool = False                 # profile in a graph: one event before each launch (see mark())
    snapshots: dict | None = None       # dumps: "hidden.L3" / "kda_out.L1" -> an fp32 copy taken during the step
    overrides: dict = field(default_factory=dict)   # the lab's sweeps: see OVERRIDES
    graphs: dict = field(default_factory=dict, repr=False)   # captured step graphs kept for reuse (onebinary)
    taps: list | None = field(default=None, repr=False)       # while capturing a step graph's template (graph())

    # ---- every launch of the step goes through here: logged, optionally timed, then run
    def _run(self, site, layer, kernel, grid, block, fn, smem=0):
        if self.log is not None:
            self.log.append(Launch(site, kernel, tuple(np.atleast_1d(grid).tolist()), block, layer, smem))
        if self.timer is None:
            return fn()
        if self.marks:
            self.mark(site)
            return fn()
        import cupy as cp
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        out = fn()
        b.record()
        self.timer.append((site, a, b))
        return out

    def mark(self, site: str) -> None:
        """A timing event before the launch at `site` (timing.mark: a graph node while capturing)."""
        self.timer.append((site, timing.mark()))

    def _k(self, site, layer, expr, grid, block, args):
        k = loader.kernel(FAMILY, expr)
        self._run(site, layer, f"{FAMILY}:{expr}", grid, block, lambda: k.launch(grid, block, args))

    def _ew(self, site, layer, expr, n, args):
        self._k(site, layer, expr, (-(-n // 256),), 256, args)

    def _residual(self, site, layer, h, a):
        """h += a: main's add_inplace, or with LAUNCHLAB_LAB_ADD=1 the plan the lab's learner registered
        (launchlab.kernels.residual_add), checked before the launch."""
        n = int(h.size)
        p = residual_add.active(n)
        if p is None:
            self._ew(site, layer, "add_inplace", n, (h, a, np.int32(n)))
            return
        self._run(site, layer, f"{residual_add.FAMILY}:{residual_add.KERNEL}", (p.grid,), p.block,
                  lambda: residual_add.launch_plan(h, a, p, check_first=False))

    def _gemm(self, site, layer, x, w, y):
        self._run(site, layer, "cublas:gemmEx", (), 0, lambda: gemv_bf16(x, w, y))

    def _norm(self, site, layer, x, wt, y):
        n = int(wt.size)
        block = self.overrides.get("rms_block") if n == self.cfg.hidden else None
        wide = True if block else None
        if self.log is None and self.timer is None:        # nothing to record: the launcher plans it itself
            rms_norm.rms_norm(x, wt, y, self.cfg.eps, n=n, block=block, wide=wide)
            return
        p = rms_norm.plan(n, launch_aligned(x, wt, y), block, wide)
        self._run(site, layer, f"rms_norm:{p.expr}", (x.size // n,), p.block,
                  lambda: rms_norm.rms_norm(x, wt, y, self.cfg.eps, n=n, block=block, wide=wide))

    # ---- one decode step
    @_on_the_chain
    def step(self, pos: int):
        """Decode the token in buf['token'] at position `pos` (appending to every cache and state); the
        logits land in buf['logits'], the next token in buf['token']. Every kernel of the step is launched on
        the decode chain's path (launchlab.core.pdl: programmatic dependent launch unless LAUNCHLAB_PDL=0)."""
        c, b, w, s = self.cfg, self.buf, self.w, self.state
        if not 0 <= pos < self.capacity:
            raise DecodeError(f"position {pos} is outside the cache (capacity {self.capacity})")
        H = c.hidden
        self._ew("embed", -1, "embed_row", H, (w["embed"], b["token"], np.int32(H), b["h"]))
        for i, kind in enumerate(c.kinds):
            L = w["layers"][i]
            self._norm(f"L{i}.input_norm", i, b["h"], L["input_norm"], b["x"])
            self._ew(f"L{i}.to_bf16", i, "to_bf16", H, (b["x"], b["xb"], np.int32(H)))
            if kind == "kda":
                self._gemm(f"L{i}.kda.in_proj", i, b["xb"], L["w_in"], b["kproj"])
                self._k(f"L{i}.kda.prep", i, "kda_prep", (c.kda_heads,), 128,
                        (b["kproj"], b["kq"], b["kk"], b["kv"], b["kg"], b["kbeta"], np.int32(c.kda_heads)))
                bv = self.overrides.get("kda_bv")
                kp = kda_decode.plan(c.kda_heads, c.kda_dim, bv)
                self._run(f"L{i}.kda.step", i, f"kda_decode:{kp.expr}", kp.grid, kp.block,
                          lambda: kda_decode.step(b["kq"], b["kk"], b["kv"], b["kg"], b["kbeta"], s["kda"][i], b["ko"],
                                           b["kscratch"], bv=bv))
                self._snap(f"kda_out.L{i}", b["ko"])
                self._norm(f"L{i}.kda.o_norm", i, b["ko"], L["o_norm"], b["kon"])
                n = c.kda_heads * c.kda_dim
                self._ew(f"L{i}.kda.o_bf16", i, "to_bf16", n, (b["kon"], b["konb"], np.int32(n)))
                self._gemm(f"L{i}.kda.o_proj", i, b["konb"], L["w_o"], b["attn"])
            else:
                self._gemm(f"L{i}.mla.q_a", i, b["xb"], L["w_qa"], b["qa"])
                self._norm(f"L{i}.mla.q_a_norm", i, b["qa"], L["qa_norm"], b["qan"])
                self._ew(f"L{i}.mla.q_a_bf16", i, "to_bf16", c.q_lora, (b["qan"], b["qab"], np.int32(c.q_lora)))
                self._gemm(f"L{i}.mla.q_b", i, b["qab"], L["w_qb"], b["q"])
                self._gemm(f"L{i}.mla.kv_a", i, b["xb"], L["w_kva"], b["kvr"])
                self._norm(f"L{i}.mla.kv_a_norm", i, b["kvr"][:c.kv_lora], L["kv_norm"], b["kvr_n"])
                if self.taps is None:
                    out = self._attend(i, pos)
                else:
                    with pdl.tapping(self.taps):
                        out = self._attend(i, pos)
                n = c.mla_heads * c.kv_lora
                self._ew(f"L{i}.mla.o_bf16", i, "to_bf16", n, (out, b["olb"], np.int32(n)))
                self._run(f"L{i}.mla.w_uv", i, "cublas:gemmStridedBatchedEx", (), 0,
                          lambda: gemv_bf16_batched(b["olb"], L["w_uv"], b["ov"]))
                n = c.mla_heads * c.v_head
                self._ew(f"L{i}.mla.v_bf16", i, "to_bf16", n, (b["ov"], b["ovb"], np.int32(n)))
                self._gemm(f"L{i}.mla.o_proj", i, b["ovb"], L["w_o"], b["attn"])
            self._residual(f"L{i}.attn_residual", i, b["h"], b["attn"])
            self._norm(f"L{i}.post_norm", i, b["h"], L["post_norm"], b["x"])
            self._ew(f"L{i}.post_bf16", i, "to_bf16", H, (b["x"], b["xb"], np.int32(H)))
            self._gemm(f"L{i}.mlp.gate_up", i, b["xb"], L["w_gu"], b["gu"])
            self._ew(f"L{i}.mlp.silu_mul", i, "silu_mul_to_bf16", c.mlp_inter,
                     (b["gu"], b["act"], np.int32(c.mlp_inter)))
            self._gemm(f"L{i}.mlp.down", i, b["act"], L["w_down"], b["mlp"])
            self._residual(f"L{i}.mlp_residual", i, b["h"], b["mlp"])
            self._snap(f"hidden.L{i}", b["h"])
        self._norm("final.norm", -1, b["h"], w["final_norm"], b["x"])
        self._ew("final.bf16", -1, "to_bf16", H, (b["x"], b["xb"], np.int32(H)))
        self._gemm("lm_head", -1, b["xb"], w["lm_head"], b["logits"])
        self._k("argmax", -1, "argmax_f32", (1,), 1024, (b["logits"], np.int32(c.vocab), b["token"]))
        return b["logits"]

    def _attend(self, i: int, pos: int):
        """MLA layer i's launches that read the position, and only those (launchlab.core.stepgraph relies on
        it): the rope-and-pack that writes the cache row at `pos`, the split-KV decode over the `pos + 1` rows
        and its combine, whose split count, grid and shared memory follow the row count. Returns the output."""
        c, b, s = self.cfg, self.buf, self.state
        cache = s["mla"][i]
        self._k(f"L{i}.mla.rope_pack", i, "mla_rope_pack", (c.mla_heads + 1,), 256,
                (b["q"], b["kvr_n"], b["kvr"], b["qb16"], cache[0, pos], np.int32(c.mla_heads), np.int32(pos)))
        upto = cache.reshape(-1)[:(pos + 1) * mla.D].reshape(1, pos + 1, mla.D)   # a contiguous prefix
        dec = mla.Decoder(b["qb16"], upto, mla.D ** -0.5, scratch=s["mla_scratch"],
                          n_splits=self.overrides.get("mla_splits"))
        dp = dec.plan
        self._run(f"L{i}.mla.split", i, f"mla_decode:{dp.kernel}", dp.grid, mla.BLOCK, dec.split, dp.smem)
        return self._run(f"L{i}.mla.combine", i, "mla_decode:mla_combine", dp.combine_grid, mla.COMBINE_BLOCK,
                         dec.combine)

    @_on_the_chain
    def position_launches(self, pos: int) -> list:
        """The step's launches at `pos` that depend on the position, worked out and recorded, not made
        (pdl.Recorded, in launch order): what launchlab.core.stepgraph patches into the captured step."""
        if not 0 <= pos < self.capacity:
            raise DecodeError(f"position {pos} is outside the cache (capacity {self.capacity})")
        if self.log is not None or self.timer is not None:
            raise DecodeError("position_launches records launches; it cannot log or time them")
        out: list = []
        with pdl.recording(out):
            for i, kind in enumerate(self.cfg.kinds):
                if kind == "mla":
                    self._attend(i, pos)
        return out

    def _snap(self, name: str, x) -> None:
        if self.snapshots is not None and name in self.snapshots:
            self.snapshots[name] = x.reshape(-1).copy()       # a device-to-device copy, not a kernel launch

    def save(self) -> dict:
        """What the steps change that a later step reads: every KDA layer's state and the next token. (An MLA
        cache row is written by the step at its position before anything reads it.)"""
        return {"kda": {i: st.copy() for i, st in self.state["kda"].items()}, "token": self.buf["token"].copy()}

    def restore(self, saved: dict) -> None:
        """Back to what save() kept, with every step buffer as build() leaves it (zeros): a second arm then
        decodes from exactly the state a fresh build would give it, without building again."""
        for i, st in saved["kda"].items():
            self.state["kda"][i][...] = st
        for name, b in self.buf.items():
            if name != "kscratch":                     # build() leaves it uninitialized; every step writes it first
                b.fill(0)
        self.buf["token"][...] = saved["token"]

    def launches(self, pos: int) -> list[Launch]:
        """The launches of one step at `pos`, in order (runs the step once)."""
        self.log = []
        try:
            self.step(pos)
        finally:
            out, self.log = self.log, None
        return out

    def timed_step(self, pos: int) -> list[tuple[str, float]]:
        """One step with a pair of CUDA events around every launch: (site, µs) in launch order. Eager: the
        host issues each launch, so gaps between launches are not in these times (the graph has none)."""
        import cupy as cp
        self.timer = []
        try:
            self.step(pos)
            cp.cuda.get_current_stream().synchronize()
            return [(site, cp.cuda.get_elapsed_time(a, b) * 1e3) for site, a, b in self.timer]
        finally:
            self.timer = None

    def graph(self, positions: list[int], stream=None):
        """The steps at `positions` in one CUDA graph (run a step at the first and the last position eagerly
        first: the warm-up loads every kernel outside the capture). By default the step at the first position
        is captured once and every position patched into a copy of it (launchlab.core.stepgraph);
        LAUNCHLAB_STEP_GRAPH=every captures every step."""
        if not positions:
            raise DecodeError("a graph of steps needs at least one position")
        stream = stream or slices.stream()
        if stepgraph.how() == "every" or len(positions) == 1:
            it = iter(positions)
            return timing.capture(lambda: self.step(next(it)), len(positions), stream), stream
        records = [self.position_launches(p) for p in positions]    # checks every position before capturing
        taps = self.taps = []
        try:
            template = timing.capture(lambda: self.step(positions[0]), 1, stream)
        finally:
            self.taps = None
        return stepgraph.StepGraph(template, taps, records), stream

    def dump_arrays(self, layers: tuple[int, ...] = ()) -> dict:
        """What a dump holds per position, in the order the step makes them: for each chosen layer, a KDA
        layer's attention output (fp32, before its norm and bf16 rounding) and the residual stream after the
        layer; then the logits."""
        arrays = {}
        for i in sorted(layers):
            if not 0 <= i < self.cfg.layers:
                raise DecodeError(f"layer {i} is outside the model's {self.cfg.layers} layers")
            if self.cfg.kind(i) == "kda":
                arrays[f"kda_out.L{i}"] = ((self.cfg.kda_heads * self.cfg.kda_dim,), np.float32)
            arrays[f"hidden.L{i}"] = ((self.cfg.hidden,), np.float32)
        arrays["logits"] = ((self.cfg.vocab,), np.float32)
        return arrays

    def dump(self, path, positions: list[int], layers: tuple[int, ...] = (), meta: dict | None = None):
        """Decode `positions` and write dump_arrays(layers) per position (launchlab.core.dumps)."""
        import cupy as cp
        arrays = self.dump_arrays(layers)
        meta = {"ctx": self.ctx, "layers": self.cfg.layers, "seed": self.cfg.seed,
                "gates": {g.env: gates.value(g.name) for g in gates.GATES.values()}} | (meta or {})
        self.snapshots = {name: None for name in arrays if name != "logits"}
        try:
            with dumps.Writer(path, arrays, meta) as wr:
                for p in positions:
                    self.step(p)
                    rec = {name: cp.asnumpy(self.snapshots[name]) for name in self.snapshots}
                    rec["logits"] = cp.asnumpy(self.buf["logits"])
                    wr.add(p, rec)
        finally:
            self.snapshots = None
        return path


def launch_aligned(*arrays) -> bool:
    return launch.aligned16(*arrays)


def build(cfg: Config | None = None, ctx: int = 2048, extra: int = 16) -> Model:
    """Weights, caches and states on the GPU for `ctx` prefilled-as-if positions plus `extra` decode steps."""
    mode.require_live("building the decode step")
    import cupy as cp
    cfg = cfg or Config()
    if isinstance(ctx, bool) or not isinstance(ctx, int) or ctx < 0:
        raise DecodeError(f"ctx must be a non-negative integer, got {ctx!r}")
    cap = ctx + max(1, extra)
    rng = cp.random.default_rng(cfg.seed)

    def bf16(shape, scale):
        """Random weights as bf16 bits (round to nearest even), drawn by CuPy and rounded in one elementwise pass:
        set-up, not part of the step, so not the course's launches."""
        return scaled_bf16(rng.standard_normal(shape, dtype=cp.float32), scale)

    def norm_w(n):
        return (1 + 0.1 * rng.standard_normal(n, dtype=cp.float32)).astype(cp.float32)

    H = cfg.hidden
    layers = []
    for kind in cfg.kinds:
        L = {"input_norm": norm_w(H), "post_norm": norm_w(H),
             "w_gu": bf16((H, 2 * cfg.mlp_inter), H ** -0.5), "w_down": bf16((cfg.mlp_inter, H), cfg.mlp_inter ** -0.5)}
        if kind == "kda":
            L |= {"w_in": bf16((H, cfg.kda_proj), H ** -0.5), "o_norm": norm_w(cfg.kda_dim),
                  "w_o": bf16((cfg.kda_heads * cfg.kda_dim, H), (cfg.kda_heads * cfg.kda_dim) ** -0.5)}
        else:
            L |= {"w_qa": bf16((H, cfg.q_lora), H ** -0.5), "qa_norm": norm_w(cfg.q_lora),
                  "w_qb": bf16((cfg.q_lora, cfg.mla_heads * mla.D), cfg.q_lora ** -0.5),
                  "w_kva": bf16((H, mla.D), H ** -0.5), "kv_norm": norm_w(cfg.kv_lora),
                  "w_uv": bf16((cfg.mla_heads, cfg.kv_lora, cfg.v_head), cfg.kv_lora ** -0.5),
                  "w_o": bf16((cfg.mla_heads * cfg.v_head, H), (cfg.mla_heads * cfg.v_head) ** -0.5)}
        layers.append(L)
    w = {"layers": layers, "embed": bf16((cfg.vocab, H), 1.0), "final_norm": norm_w(H),
         "lm_head": bf16((H, cfg.vocab), H ** -0.5)}
    state = {"kda": {}, "mla": {}, "mla_scratch": mla.Scratch(cfg.mla_heads)}
    for i, kind in enumerate(cfg.kinds):
        if kind == "kda":
            state["kda"][i] = rng.standard_normal((cfg.kda_heads, cfg.kda_dim, cfg.kda_dim),
                                                  dtype=cp.float32) * np.float32(0.1)
        else:
            state["mla"][i] = bf16((1, cap, mla.D), mla.D ** -0.25)     # rows past ctx are written by the steps
    f32 = lambda n: cp.zeros(n, dtype=cp.float32)
    u16 = lambda n: cp.zeros(n, dtype=cp.uint16)
    nk = cfg.kda_heads * cfg.kda_dim
    buf = {"token": cp.zeros(1, dtype=cp.int32), "h": f32(H), "x": f32(H), "xb": u16(H), "attn": f32(H),
           "mlp": f32(H), "gu": f32(2 * cfg.mlp_inter), "act": u16(cfg.mlp_inter), "logits": f32(cfg.vocab),
           "kproj": f32(cfg.kda_proj), "kq": f32((cfg.kda_heads, cfg.kda_dim)), "kk": f32((cfg.kda_heads, cfg.kda_dim)),
           "kv": f32((cfg.kda_heads, cfg.kda_dim)), "kg": f32((cfg.kda_heads, cfg.kda_dim)), "kbeta": f32(cfg.kda_heads),
           "ko": f32((cfg.kda_heads, cfg.kda_dim)), "kon": f32((cfg.kda_heads, cfg.kda_dim)), "konb": u16(nk),
           "kscratch": cp.empty((cfg.kda_heads, cfg.kda_dim, cfg.kda_dim), dtype=cp.float32),
           "qa": f32(cfg.q_lora), "qan": f32(cfg.q_lora), "qab": u16(cfg.q_lora), "q": f32(cfg.mla_heads * mla.D),
           "kvr": f32(mla.D), "kvr_n": f32(cfg.kv_lora), "qb16": u16((1, cfg.mla_heads, mla.D)),
           "olb": u16(cfg.mla_heads * cfg.kv_lora), "ov": f32(cfg.mla_heads * cfg.v_head),
           "ovb": u16(cfg.mla_heads * cfg.v_head)}
    cp.cuda.Device().synchronize()
    return Model(cfg, ctx, cap, w, state, buf)
