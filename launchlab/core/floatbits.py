"""float32 arithmetic in numpy, bit for bit as the GPU does it.

numpy's float32 add and multiply round exactly as CUDA's do (IEEE round-to-nearest-even, no flush to zero for
normal numbers). What numpy lacks is the fused multiply-add nvcc emits for `acc += x * x` (FFMA: one rounding
of x*x + acc). `fma32` computes it exactly: the float64 product of two float32 values is exact, TwoSum gives
the exact error of the float64 sum, and the one case where rounding float64 -> float32 would double-round (the
float64 sum landing exactly on a float32 midpoint) is decided by the sign of that error.
"""
from __future__ import annotations

import numpy as np

f32, f64 = np.float32, np.float64


def fma32(a, b, c) -> np.ndarray:
    """round_to_float32(a * b + c) computed exactly, elementwise, for float32 inputs."""
    a, b, c = (np.asarray(v, dtype=f32) for v in (a, b, c))
    p = a.astype(f64) * b.astype(f64)             # exact: 24 + 24 bits fit in 53
    cc = c.astype(f64)
    s = p + cc                                    # rounded to float64
    bb = s - p                                    # TwoSum: e is the exact rounding error of s
    e = (p - (s - bb)) + (cc - bb)
    r = s.astype(f32)                             # round-to-nearest-even from float64
    # a double rounding can only occur if s sits exactly halfway between two float32 neighbours
    lo = np.where(r.astype(f64) > s, np.nextafter(r, f32(-np.inf)), r)
    hi = np.nextafter(lo, f32(np.inf))
    mid = (lo.astype(f64) + hi.astype(f64)) == 2 * s
    fix = mid & (e != 0)
    if np.any(fix):
        r = np.where(fix, np.where(e > 0, hi, lo), r)
    return r


def bits(x) -> np.ndarray:
    """The uint32 bit patterns of float32 values."""
    return np.asarray(x, dtype=f32).view(np.uint32)


def ulp_distance(a, b) -> np.ndarray:
    """How many float32 steps apart a and b are, elementwise (0: the same value, 1: neighbours), for finite
    values of either sign. The bits read as a signed integer are monotone in the value once a negative's are
    flipped to -(bits & 0x7FFFFFFF), so the distance is the difference of those integers (+0 and -0 are 0 apart;
    the smallest subnormals either side of zero are 2 apart)."""
    def ordered(x):
        i = np.asarray(x, dtype=f32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(a) - ordered(b))


def xor_tree(v: np.ndarray) -> np.ndarray:
    """The warp shuffle butterfly of common.cuh's warp_sum over the last axis (32 lanes): for offsets 16, 8,
    4, 2, 1, every lane adds the value of lane ^ offset. Returns lane 0's total (every lane holds the same)."""
    v = np.asarray(v, dtype=f32).copy()
    assert v.shape[-1] == 32
    lanes = np.arange(32)
    for off in (16, 8, 4, 2, 1):
        v = v + v[..., lanes ^ off]
    return v[..., 0]


def block_sum(per_thread: np.ndarray) -> np.ndarray:
    """common.cuh's block_sum over the last axis (threads, a multiple of 32): a xor tree in each warp, then
    warp 0 folds the per-warp sums (lanes past the number of warps hold +0.0)."""
    t = per_thread.shape[-1]
    assert t % 32 == 0 and t <= 1024
    warps = per_thread.reshape(per_thread.shape[:-1] + (t // 32, 32))
    ws = xor_tree(warps)                                    # (..., nwarps)
    lanes = np.zeros(per_thread.shape[:-1] + (32,), dtype=f32)
    lanes[..., : t // 32] = ws
    return xor_tree(lanes)
