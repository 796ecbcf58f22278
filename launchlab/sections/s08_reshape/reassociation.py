"""§8: when a reshape is not free -- the split count reassociates the combine, and what a gate can see.

Measured on the MLA split decode (launchlab.kernels.mla), byte for byte:
  - the same split count twice gives the same bytes; a different count gives different fp32 bytes (the
    online-softmax sums are added in another grouping), every count inside the proven error bound;
  - a parity gate at ctx <= 4,096 cannot see the derived floor: below SPLIT_MIN_CTX both arms launch one
    split, so their bytes agree; at 131,072 they differ;
  - batch invariance: a split count derived from the SM count and the batch gives request 0 different bits at
    batch 1 and batch 2; a fixed slice size gives it the same bits;
  - an approximation engaged only past 16,384 tokens (LAUNCHLAB_MLA_SKIP: the combine drops splits whose
    weight is below 1e-5) is byte-inert at or below 16,384 and inside its derived bound beyond.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from launchlab.core import floatbits, mode, recordings
from launchlab.core.door import Door
from launchlab.core.recordings import RECORDED
from launchlab.kernels import mla

CTX = 131_072
S_LIST = (1, 64, 128, 256, 264)
BASE_S = 256
GATE_CTX = (512, 2_048, 4_096, 8_192, 16_384, 32_768, 131_072)   # the parity suite's depths, then past it
ULP_BINS = ((0, 0), (1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, None))   # ulp distances, inclusive ranges
# |out_S - out_base| as a share of the proven bound, per output: exactly 0, then (lo, hi] ranges
BOUND_BINS = ((0.0, 0.0), (0.0, 1e-4), (1e-4, 1e-3), (1e-3, 1e-2), (1e-2, None))
SKIP_CTX = (8_192, 16_384, 32_768, 131_072)
FIXED_SLICE = 512


def fingerprint(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def differ(a: np.ndarray, b: np.ndarray) -> tuple[int, float]:
    """How many elements differ in their bytes, and the largest absolute difference."""
    ne = a.view(np.uint32) != b.view(np.uint32)
    return int(ne.sum()), float(np.max(np.abs(a.astype(np.float64) - b))) if ne.any() else 0.0


def ulp_histogram(dist: np.ndarray) -> list[int]:
    """Counts of `dist` in each of ULP_BINS."""
    return [int(((dist >= lo) & (dist <= (hi if hi is not None else np.iinfo(np.int64).max))).sum())
            for lo, hi in ULP_BINS]


def ulp_label(i: int) -> str:
    lo, hi = ULP_BINS[i]
    return f"> {lo - 1}" if hi is None else (str(lo) if lo == hi else f"{lo}–{hi}")


def bound_histogram(share: np.ndarray) -> list[int]:
    """Counts of `share` (|difference| / bound, per output) in each of BOUND_BINS: exactly 0, then (lo, hi]."""
    out = []
    for lo, hi in BOUND_BINS:
        if lo == hi:
            out.append(int((share == lo).sum()))
        else:
            out.append(int(((share > lo) & (share <= (np.inf if hi is None else hi))).sum()))
    return out


def bound_label(i: int) -> str:
    lo, hi = BOUND_BINS[i]
    pct = lambda x: f"{100 * x:g} %"  # noqa: E731
    return "0 (same bytes)" if lo == hi else (f"> {pct(lo)}" if hi is None else
                                              (f"≤ {pct(hi)}" if lo == 0 else f"{pct(lo)}–{pct(hi)}"))


@dataclass
class BySplits:
    splits: int
    slice_tokens: int
    sha: str
    n_differ: int              # elements whose bytes differ from the base split count's output
    max_abs_diff: float
    err_over_bound: float      # max |out - float64 reference| / the proven bound (<= 1)
    max_abs_err: float
    ulps: list[int]            # how many outputs lie 0, 1, 2, 3-4, 5-8, 9-16, > 16 fp32 values from the base's
    max_ulps: int              # (the outputs' own floats: a near-cancelling sum makes these large, see §8)
    own_ulps_median: int       # median ulp distance over the outputs that differ (0 if none)
    sign_flips: int            # outputs whose sign differs from the base's
    bound_use: list[int]       # outputs by |out - base| / the proven bound, in BOUND_BINS
    max_bound_use: float       # the largest |out - base| / bound


@dataclass
class GateCase:
    ctx: int
    splits_hardcoded: int
    splits_derived: int
    identical: bool
    n_differ: int


@dataclass
class BatchCase:
    rule: str
    splits_batch1: int
    splits_batch2: int
    identical: bool
    n_differ: int


@dataclass
class SkipCase:
    ctx: int
    splits: int
    dropped: int               # splits whose weight fell below the threshold
    threshold: float           # 0: the approximation did not engage
    identical: bool            # bytes equal to the exact arm
    max_abs_err: float         # |skip - exact| on the GPU
    bound: float               # the a-priori bound: 2 x dropped x threshold x max |o_s| + rounding
    max_abs_out: float


@dataclass
class ReassocData:
    ctx: int
    elements: int
    repeat_identical: bool
    by_splits: list[BySplits]
    gate: list[GateCase]
    batch: list[BatchCase]
    skip: list[SkipCase]
    source: str = field(default="", metadata={RECORDED: False})

    def at(self, s: int) -> BySplits:
        return next(b for b in self.by_splits if b.splits == s)


def skip_bound(o_split: np.ndarray, lse: np.ndarray, threshold: float) -> tuple[int, float]:
    """The approximation's a-priori bound from one request's split outputs (splits, heads, 512) and LSEs.

    With kept weights W' (>= 1: the largest split weighs exactly 1) and dropped weights W_K (each below the
    threshold), the exact output is (W' o' + W_K o_K) / (W' + W_K), so |exact - kept| = W_K / (W' + W_K) x
    |o_K - o'| <= |K| x threshold x 2 max|o_s|. The two arms also add their kept terms in a different grouping:
    2 x splits x u x max|o_s| more."""
    m = lse.max(axis=0, keepdims=True)
    w = np.exp(lse - m)
    dropped = int((w < threshold).any(axis=1).sum()) if threshold > 0 else 0
    omax = float(np.max(np.abs(o_split)))
    k_max = int((w < threshold).sum(axis=0).max()) if threshold > 0 else 0
    return dropped, 2 * k_max * threshold * omax + 2 * lse.shape[0] * mla.U32 * omax


def _runner(d: dict):
    """run(**plan) -> (the decode's output as numpy, its Plan), on inputs `d` copied to the GPU once."""
    import cupy as cp
    q, kv = cp.asarray(d["q"]), cp.asarray(d["kv"])

    def run(**kw):
        out, p = mla.decode(q, kv, d["scale"], pipeline="off", **kw)
        return cp.asnumpy(out), p
    return run


def _by_splits(run, s: int, base: np.ndarray, ref: np.ndarray, d: dict, terms) -> BySplits:
    out, p = run(n_splits=s)
    n, mx = differ(out, base)
    bound = mla.error_bound(d["q"], d["kv"], d["scale"], p, terms)
    dist = floatbits.ulp_distance(out, base)
    share = np.abs(out.astype(np.float64) - base) / bound
    return BySplits(p.split.splits, p.split.slice_tokens, fingerprint(out), n, mx,
                    mla.max_error_over_bound(out, ref, bound), float(np.max(np.abs(out - ref))),
                    ulp_histogram(dist), int(dist.max()), int(np.median(dist[dist > 0])) if n else 0,
                    int((np.signbit(out) != np.signbit(base)).sum()), bound_histogram(share), float(share.max()))


def _prefetch(pool, ctx: int) -> dict:
    """Every later part's inputs, drawn on the host in worker threads while the GPU decodes the first part's
    (NumPy's generators and ufuncs release the GIL on large arrays; each draw has its own seed, so the values
    are those of drawing them one after another)."""
    return {"gate": [pool.submit(mla.inputs, 1, 16, c, seed=9) for c in GATE_CTX],
            "batch": pool.submit(mla.inputs, 2, 16, ctx, seed=10),
            "skip": [pool.submit(mla.inputs_recent, 1, 16, c) for c in SKIP_CTX]}


def measure(ctx: int = CTX) -> ReassocData:
    mode.require_live("measuring the split reassociation")
    import os
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max(1, min(4, (os.cpu_count() or 2) - 1))) as pool:
        return _measure(ctx, pool)


def _measure(ctx: int, pool) -> ReassocData:
    import cupy as cp
    d = mla.inputs(1, 16, ctx, seed=8)
    later = _prefetch(pool, ctx)
    run = _runner(d)
    ref = mla.reference(d["q"], d["kv"], d["scale"])
    base, _ = run(n_splits=BASE_S)
    again, _ = run(n_splits=BASE_S)
    terms = mla.bound_terms(d["q"], d["kv"], d["scale"])     # the inputs' part of the bound, once for every S
    if ctx == CTX:                 # the explorer decodes these same inputs: it starts from them
        _live.clear()
        _live.update(d=d, run=run, ref=ref, terms=terms, base=base)
    by = [_by_splits(run, s, base, ref, d, terms) for s in S_LIST]
    gate = []
    for c, job in zip(GATE_CTX, later["gate"]):
        dc = job.result()
        qc, kc = cp.asarray(dc["q"]), cp.asarray(dc["kv"])
        a, pa = mla.decode(qc, kc, dc["scale"], "hardcoded", "off")
        b, pb = mla.decode(qc, kc, dc["scale"], "derived", "off")
        n, _ = differ(cp.asnumpy(a), cp.asnumpy(b))
        gate.append(GateCase(c, pa.split.splits, pb.split.splits, n == 0, n))
    batch = []
    d2 = later["batch"].result()
    q2, kv2 = cp.asarray(d2["q"]), cp.asarray(d2["kv"])
    for rule, kw in (("derived from SMs and batch", {}), (f"fixed slice of {FIXED_SLICE} tokens",
                                                          {"slice_tokens": FIXED_SLICE})):
        o2, p2 = mla.decode(q2, kv2, d2["scale"], "derived", "off", **kw)
        o1, p1 = mla.decode(q2[:1].copy(), kv2[:1].copy(), d2["scale"], "derived", "off", **kw)
        n, _ = differ(cp.asnumpy(o1)[0], cp.asnumpy(o2)[0])
        batch.append(BatchCase(rule, p1.split.splits, p2.split.splits, n == 0, n))
    skip = []
    for c, job in zip(SKIP_CTX, later["skip"]):
        dr = job.result()
        qr, kr = cp.asarray(dr["q"]), cp.asarray(dr["kv"])
        exact = mla.Decoder(qr, kr, dr["scale"], skip="off", floor="derived", pipeline="off")
        e = cp.asnumpy(exact())
        approx = mla.Decoder(qr, kr, dr["scale"], skip="on", floor="derived", pipeline="off")
        a = cp.asnumpy(approx())
        o_split, lse = cp.asnumpy(approx.o_split)[0], cp.asnumpy(approx.lse)[0]
        dropped, bound = skip_bound(o_split, lse, approx.drop_below)
        n, mx = differ(a, e)
        skip.append(SkipCase(c, exact.plan.split.splits, dropped, approx.drop_below, n == 0, mx, bound,
                             float(np.max(np.abs(e)))))
    return ReassocData(ctx, int(base.size), fingerprint(base) == fingerprint(again), by, gate, batch, skip, "live")


_parse, _dump = recordings.codec(ReassocData, "reassociation", "section08")


DOOR: Door[ReassocData] = Door("split reassociation (§8)", "section08", (mla.FAMILY,), measure, _parse, _dump)
data = DOOR.data
recorded = DOOR.recorded


_live: dict = {}


def point(s: int) -> tuple[BySplits, str]:
    """One split count for the explorer: decoded now at ctx 131,072 on the recording's inputs (seed 8) and
    compared with S = 256 byte for byte, ulp by ulp and against the bound (live), or the recorded row (replay:
    the recorded counts only)."""
    def now():
        if not _live:
            d = mla.inputs(1, 16, CTX, seed=8)
            _live.update(d=d, run=_runner(d), ref=mla.reference(d["q"], d["kv"], d["scale"]),
                         terms=mla.bound_terms(d["q"], d["kv"], d["scale"]))
            _live["base"] = _live["run"](n_splits=BASE_S)[0]
        return _by_splits(_live["run"], s, _live["base"], _live["ref"], _live["d"], _live["terms"]), "decoded now"

    def recorded_row():
        if s not in S_LIST:
            raise KeyError(f"S = {s} was not recorded; the recording holds S = {', '.join(map(str, S_LIST))}")
        return data().at(s), "recorded on the H200"
    return DOOR.choose(live=now, replay=recorded_row)


def headline(r: ReassocData) -> dict:
    others = [b for b in r.by_splits if b.splits != BASE_S]
    inside = [s for s in r.skip if s.ctx <= mla.SKIP_MIN_CTX]
    beyond = [s for s in r.skip if s.ctx > mla.SKIP_MIN_CTX]
    return {"split_bytes_identical_same_s": r.repeat_identical,
            "split_bytes_differ_across_s": all(b.n_differ > 0 for b in others),
            "split_max_err_over_bound": max(b.err_over_bound for b in r.by_splits),
            "gate_4096_identical": next(g.identical for g in r.gate if g.ctx == 4096),
            "gate_131072_differ": not next(g.identical for g in r.gate if g.ctx == 131_072),
            "batch_invariant_fixed_slice": next(b.identical for b in r.batch if b.rule.startswith("fixed")),
            "batch_invariant_derived": next(b.identical for b in r.batch if b.rule.startswith("derived")),
            "skip_inert_at_or_below_16384": all(s.identical for s in inside),
            "skip_err_over_bound_max": max(s.max_abs_err / s.bound for s in beyond)}
