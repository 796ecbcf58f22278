"""§4: how many KV splits a split-KV decode launches -- derived from the shape and a named target, not pinned.

MLA decode after head sharding: per rank, `n_head` query heads over one shared latent KV head, `batch`
requests of `ctx` tokens. The split kernel's block covers one slice of `slice_tokens` tokens for one tile of
up to HEAD_TILE query heads (an m16 MMA tile: 16 heads fill it exactly), so

    grid = batch x head_tiles x splits,   head_tiles = ceil(n_head / HEAD_TILE),   splits = ceil(ctx / slice)

Main (before PR #73): a flat floor of SLICE_FLOOR_TOKENS = 1024 tokens per slice. Written when the grid had
plenty of head tiles, it strands the grid once sharding leaves one tile: 128 blocks at ctx 131,072 on 132 SMs.

Derived (the PR): aim at a named target, K_MLA_BLOCKS_PER_SM resident blocks on every SM, and derive the
slice from it: splits_target = ceil(target_blocks / (batch x head_tiles)), slice = ctx / splits_target
rounded up to whole TILE_TOKENS tiles. At ctx 131,072, 16 heads, batch 1: 264 / 1 -> 497 -> 512 tokens,
256 splits, 256 blocks ("two per SM", 97 % of 264).

Two bounds around it, both named: below SPLIT_MIN_CTX no split happens (one slice: nothing to balance, and
the split path's combine is skipped), and splits never exceed MAX_SPLITS (the combine's per-split scratch is
sized for it) nor ctx / TILE_TOKENS (a slice is at least one tile).

`rules()` sets this beside how other decode libraries choose their split counts (read from their sources;
see the notebook for the citations), as functions of the same shape.
"""
from __future__ import annotations

from dataclasses import dataclass

from launchlab.core import hardware

HEAD_TILE = 16               # query heads per block: one m16 tensor-core tile
TILE_TOKENS = 64             # tokens per inner tile: a slice is a whole number of them
SLICE_FLOOR_TOKENS = 1024    # main's pinned floor (the lecture's "flat 1024-token slice floor")
K_MLA_BLOCKS_PER_SM = 2      # the target: two resident blocks per SM, so one's loads overlap another's math
SPLIT_MIN_CTX = 8192         # no split at or below this context (the parity gate's 4,096 lies below it)
MAX_SPLITS = 1024            # the combine's scratch (per split: n_head x 512 fp32 outputs + n_head LSEs)
MODES = ("derived", "hardcoded")


class SplitError(ValueError):
    pass


@dataclass(frozen=True)
class Split:
    """One launch's split decision, with the arithmetic that produced it."""
    mode: str
    ctx: int
    n_head: int
    batch: int
    sm_count: int
    blocks_per_sm: int
    slice_tokens: int
    splits: int

    @property
    def head_tiles(self) -> int:
        return -(-self.n_head // HEAD_TILE)

    @property
    def grid(self) -> int:
        """Blocks of the split kernel."""
        return self.batch * self.head_tiles * self.splits

    @property
    def target_blocks(self) -> int:
        return self.blocks_per_sm * self.sm_count

    @property
    def share_of_target(self) -> float:
        """Grid over the target's slots: 1.0 is exactly the target, a fraction leaves slots empty."""
        return self.grid / self.target_blocks

    def describe(self) -> str:
        return (f"{self.mode}: ctx {self.ctx:,}, {self.n_head} heads ({self.head_tiles} tile(s)), batch {self.batch}"
                f" -> slice {self.slice_tokens} tokens, {self.splits} splits,\n{' ' * (len(self.mode) + 2)}grid "
                f"{self.grid} blocks = {self.share_of_target:.0%} of {self.blocks_per_sm} x {self.sm_count} SMs")


def _positive_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise SplitError(f"{name} must be a positive integer, got {v!r}")
    return v


def split(ctx: int, n_head: int = 16, batch: int = 1, mode: str = "derived", gpu="H200",
          blocks_per_sm: int = K_MLA_BLOCKS_PER_SM) -> Split:
    """The split count a launch uses for this shape (see the module docstring for the arithmetic)."""
    ctx, n_head, batch = (_positive_int(n, v) for n, v in (("ctx", ctx), ("n_head", n_head), ("batch", batch)))
    blocks_per_sm = _positive_int("blocks_per_sm", blocks_per_sm)
    if mode not in MODES:
        raise SplitError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    sms = hardware.spec(gpu).sm_count
    tiles = -(-n_head // HEAD_TILE)
    if ctx <= SPLIT_MIN_CTX:
        slice_tokens = ctx                                             # one slice: no split, no combine
    elif mode == "hardcoded":
        slice_tokens = SLICE_FLOOR_TOKENS
    else:
        want = -(-(blocks_per_sm * sms) // (batch * tiles))            # splits per (request, head tile)
        slice_tokens = -(-ctx // want)
        slice_tokens = -(-slice_tokens // TILE_TOKENS) * TILE_TOKENS   # whole tiles
    splits = -(-ctx // slice_tokens)
    if splits > MAX_SPLITS:                                            # the cap: widen the slice instead
        slice_tokens = -(-(-(-ctx // MAX_SPLITS)) // TILE_TOKENS) * TILE_TOKENS
        splits = -(-ctx // slice_tokens)
    return Split(mode, ctx, n_head, batch, sms, blocks_per_sm, slice_tokens, splits)


def forced(ctx: int, n_head: int = 16, batch: int = 1, *, splits: int | None = None,
           slice_tokens: int | None = None, gpu="H200") -> Split:
    """A split decision given outright, for sweeps and for §8's determinism questions: either a split count
    (slice = ceil(ctx / splits) tokens, not rounded to whole tiles: the kernel masks a partial tile) or a fixed
    slice size (splits = ceil(ctx / slice), whatever the batch: the batch-invariant choice). Refused past
    MAX_SPLITS, the combine's scratch."""
    ctx, n_head, batch = (_positive_int(n, v) for n, v in (("ctx", ctx), ("n_head", n_head), ("batch", batch)))
    if (splits is None) == (slice_tokens is None):
        raise SplitError("give exactly one of splits= or slice_tokens=")
    if splits is not None:
        splits = _positive_int("splits", splits)
        if splits > ctx:
            raise SplitError(f"{splits} splits of a {ctx}-token context would leave splits empty")
        slice_tokens, how = -(-ctx // splits), "fixed-splits"
    else:
        slice_tokens, how = _positive_int("slice_tokens", slice_tokens), "fixed-slice"
    n = -(-ctx // slice_tokens)
    if n > MAX_SPLITS:
        raise SplitError(f"{n} splits is beyond the cap of {MAX_SPLITS} (the combine's scratch and weight table "
                         f"are sized for it): use a slice of at least {-(-ctx // MAX_SPLITS)} tokens")
    return Split(how, ctx, n_head, batch, hardware.spec(gpu).sm_count, K_MLA_BLOCKS_PER_SM, slice_tokens, n)


def fa2_splits(work_blocks: int, sms: int, kv_blocks: int, max_splits: int = 128) -> int:
    """FlashAttention-2's split heuristic (csrc/flash_attn/flash_api.cpp, num_splits_heuristic), in the
    course's words: no split when the grid already fills 80 % of the slots; otherwise the smallest split count
    whose wave efficiency (waves / whole waves) is at least 85 % of the best one, counting only counts that
    change the number of KV blocks per split. FA2 calls it with twice the SM count as the slots."""
    if work_blocks >= 0.8 * sms:
        return 1
    max_splits = min(max_splits, sms, kv_blocks)
    per = lambda n: -(-kv_blocks // n)
    eligible = lambda n: n == 1 or per(n) != per(n - 1)
    eff = {}
    for n in range(1, max_splits + 1):
        if eligible(n):
            waves = work_blocks * n / sms
            eff[n] = waves / -(-waves // 1) if waves else 0.0
    best = max(eff.values())
    return next(n for n in sorted(eff) if eff[n] >= 0.85 * best)


# ------------------------------------------------------------------ how other decode libraries choose
@dataclass(frozen=True)
class Rule:
    system: str
    rule: str                # the rule in one line, in the course's words
    source: str              # where it was read
    blocks: int              # split blocks it launches per request and KV head at the asked shape


def _flashinfer_limit(total_kv: int, clusters: int) -> int:
    """FlashInfer's MLA plan: the per-chunk KV limit, total KV over the clusters (one per SM here), rounded up
    to 32 / 64 / 128 / 192 or to a multiple of 256."""
    lim = -(-total_kv // clusters)
    for step in (32, 64, 128, 192):
        if lim <= step:
            return step
    return -(-lim // 256) * 256


def _next_pow2(n: int) -> int:
    return 1 << (max(1, n) - 1).bit_length()


def rules(ctx: int, n_head: int = 16, batch: int = 1, gpu="H200") -> list[Rule]:
    """What other decode implementations would launch per request for this shape (one KV head, one query
    token), from the rules in their sources (read 2026-11; the notebook cites them)."""
    sms = hardware.spec(gpu).sm_count
    return [
        Rule("this course, derived", f"slice = ctx / ceil({K_MLA_BLOCKS_PER_SM} x SMs / (batch x head tiles)), "
             f"in whole {TILE_TOKENS}-token tiles", "launchlab.kernels.splits", split(ctx, n_head, batch).splits),
        Rule("main, hardcoded", f"a flat {SLICE_FLOOR_TOKENS}-token slice", "the lecture, section 4",
             split(ctx, n_head, batch, "hardcoded").splits),
        Rule("FlashMLA", "one part per SM for each KV head and 64-row query group: SMs / KV heads / ceil(rows / 64)",
             "deepseek-ai/FlashMLA, get_decoding_sched_meta", max(sms // 1 // -(-n_head // 64), 1)),
        Rule("PyTorch flex decoding", "two splits per SM: SMs // (batch x KV heads) x 2",
             "torch/_inductor/kernel/flex/flex_decoding.py", max(sms // batch * 2, 1)),
        Rule("sglang Triton MLA", "min(next power of 2 of SMs, next power of 2 of ctx / 32)",
             "sglang/srt/layers/attention/triton_backend.py", min(_next_pow2(sms), _next_pow2(-(-ctx // 32)))),
        Rule("sglang, deterministic mode", "ceil(ctx / 256): a fixed slice, so the same bits at any batch",
             "sglang/srt/layers/attention/triton_backend.py", -(-ctx // 256)),
        Rule("FlashAttention-2", "no split past 0.8 x slots; else the smallest count within 85 % of the best wave "
             "efficiency, slots = 2 x SMs (as if it took head dim 576: 64-token KV blocks)", "Dao-AILab/flash-attention, csrc/flash_attn/flash_api.cpp",
             fa2_splits(batch * -(-n_head // 64), 2 * sms, -(-ctx // 64))),
        Rule("FlashInfer MLA plan", "one chunk per SM: kv_len_limit = total KV / SMs, rounded to 64 then 256",
             "flashinfer-ai/flashinfer, include/flashinfer/attention/scheduler.cuh",
             -(-ctx // _flashinfer_limit(batch * ctx, sms))),
        Rule("vLLM TRITON_MLA", "a pinned 4 (1 in batch-invariant mode)",
             "vllm/v1/attention/backends/mla/triton_mla.py", 4),
    ]
