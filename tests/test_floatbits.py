"""float32 arithmetic bit for bit (launchlab.core.floatbits), against exact rational arithmetic and orders of
addition written out by hand."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launchlab.core import floatbits as fb

f32 = np.float32


def exact_fma32(a, b, c) -> np.float32:
    """round_to_nearest_even_float32(a * b + c) by exact rationals: the two float32 neighbours of the exact
    value, and the nearer one (the one with an even last bit on a tie)."""
    x = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    r = f32(float(x))                                  # float64 rounding, then float32: may double-round
    cands = {r, np.nextafter(r, f32(np.inf)), np.nextafter(r, f32(-np.inf))}
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - x), int(fb.bits(v)) & 1))
    return f32(best)


FINITE = st.floats(width=32, allow_nan=False, allow_infinity=False, min_value=-2.0 ** 60, max_value=2.0 ** 60)


@settings(max_examples=2000, deadline=None)
@given(a=FINITE, b=FINITE, c=FINITE)
def test_fma32_is_one_rounding_of_the_exact_value(a, b, c):
    got = fb.fma32(f32(a), f32(b), f32(c))
    want = exact_fma32(f32(a), f32(b), f32(c))
    assert fb.bits(got) == fb.bits(want) or (got == 0 and want == 0)


def test_fma32_on_a_double_rounding_case():
    """a x b exceeds 2^-24 by 125,719 x 2^-70 (exact, by Fraction), so a x b + 1 lies just above the float32 tie
    1 + 2^-24 and rounds up to 1 + 2^-23. Rounding to float64 first lands exactly on the tie (the excess is below
    float64's half-spacing at 1), and float32's round-to-even then gives 1: the double rounding fma32 avoids."""
    a, b = np.uint32(1073323235).view(f32), np.uint32(855852666).view(f32)
    assert Fraction(float(a)) * Fraction(float(b)) - Fraction(1, 2 ** 24) == Fraction(125719, 2 ** 70)
    naive = f32(np.float64(a) * np.float64(b) + 1.0)
    assert naive == f32(1.0)
    got = fb.fma32(a, b, f32(1.0))
    assert fb.bits(got) == fb.bits(np.nextafter(f32(1.0), f32(2.0)))
    # the exact tie (1 x 2^-24 + 1) goes to even; a hair below it goes down
    assert fb.fma32(f32(1.0), f32(2.0 ** -24), f32(1.0)) == f32(1.0)
    assert fb.fma32(np.nextafter(f32(1.0), f32(0.0)), f32(2.0 ** -24), f32(1.0)) == f32(1.0)
    arr = fb.fma32(np.array([1.0, 2.0], f32), np.array([3.0, 4.0], f32), np.array([0.5, 0.25], f32))
    assert arr.dtype == f32 and arr.tolist() == [3.5, 8.25]


def test_bits_and_ulp_distance():
    assert fb.bits(f32(1.0)) == 0x3F800000 and fb.bits(f32(-0.0)) == 0x80000000
    assert fb.bits([1.0, 2.0]).dtype == np.uint32 and fb.bits([1.0, 2.0]).tolist() == [0x3F800000, 0x40000000]
    assert fb.ulp_distance(f32(-1.0), np.nextafter(f32(-1.0), f32(-2.0))) == 1


def test_the_xor_tree_adds_in_the_butterfly_s_order():
    """Lane 0's total after offsets 16, 8, 4, 2, 1: ((((v0 + v16) + (v8 + v24)) + ...)): the order the warp
    adds in, written out. Values where float32 order matters: 1 in lane 0, 2^-24 in every other lane."""
    v = np.full(32, 2.0 ** -24, f32)
    v[0] = 1.0
    t = v.copy()
    for off in (16, 8, 4, 2, 1):
        t = (t + t[np.arange(32) ^ off]).astype(f32)
    assert fb.bits(fb.xor_tree(v)) == fb.bits(t[0])
    assert fb.bits(fb.xor_tree(v)) != fb.bits(f32(np.sum(v, dtype=np.float64)))    # not the exact sum
    # by hand: after offset 16 lane 0 holds 1 + 2^-24, which rounds to 1 (a tie, to even); every later
    # partner holds sums of 2^-24s, exact: 2, 4, 8, 16 x 2^-24 -> 1 + 30 x 2^-24 rounds to 1 + 15 x 2^-23
    assert fb.xor_tree(v) == f32(1.0 + 15 * 2.0 ** -23)
    with pytest.raises(AssertionError):
        fb.xor_tree(np.ones(16, f32))
    assert fb.xor_tree(np.ones((3, 32), f32)).tolist() == [32.0, 32.0, 32.0]


def test_block_sum_folds_the_warps_then_warp_0():
    """64 threads = 2 warps: each warp's xor tree, then warp 0 adds the two sums with +0.0 in lanes 2..31."""
    x = np.arange(64, dtype=f32)
    w0, w1 = fb.xor_tree(x[:32]), fb.xor_tree(x[32:])
    assert fb.block_sum(x) == w0 + w1 == f32(2016)
    assert fb.block_sum(np.ones((2, 128), f32)).tolist() == [128.0, 128.0]
    with pytest.raises(AssertionError):
        fb.block_sum(np.ones(48, f32))
    with pytest.raises(AssertionError):
        fb.block_sum(np.ones(2048, f32))
    # negative zeros in every thread: the padding lanes hold +0.0, so the block's sum is +0.0
    assert fb.bits(fb.block_sum(np.full(64, -0.0, f32))) == 0


def test_fma32_near_every_kind_of_tie_against_exact_rationals():
    """3,000 products placed within a few float32 steps of half an ulp of c (where float64's rounding can land on
    a float32 tie), with c = 1 (an even last bit below the tie) and c = 1 + 2^-23 (odd): both directions of the
    exact value's side, every one against exact rationals."""
    r = np.random.default_rng(7)
    cases = 0
    for c in (f32(1.0), np.nextafter(f32(1.0), f32(2.0)), f32(-1.0)):
        for _ in range(500):
            a = f32(1 + r.integers(1, 2 ** 23) * 2.0 ** -23)
            b0 = f32(2.0 ** -24 / a)
            for b in (b0, np.nextafter(b0, f32(1)), np.nextafter(b0, f32(0))):
                assert fb.bits(fb.fma32(a, b, c)) == fb.bits(exact_fma32(a, b, c)), (a, b, c)
                cases += 1
    assert cases == 4500


def test_float64_inputs_are_taken_as_float32_first():
    """Python floats are float32 values here, as the GPU sees them: 0.1 is rounded to float32 before the
    multiply-add, and the result is a float32."""
    got = fb.fma32(0.1, 3.0, 0.0)
    assert got.dtype == f32 and fb.bits(got) == fb.bits(exact_fma32(f32(0.1), f32(3.0), f32(0.0)))
    assert fb.ulp_distance(1.0, 1.0 + 2.0 ** -23) == 1 and fb.ulp_distance([0.1], [0.1]).tolist() == [0]
    assert fb.xor_tree(np.full(32, 0.1)).dtype == f32
    assert fb.bits(fb.xor_tree(np.full(32, 0.1))) == fb.bits(fb.xor_tree(np.full(32, 0.1, f32)))


def test_the_xor_tree_pairs_lanes_as_the_butterfly_does():
    """Random lanes, where every pairing gives other bits: the butterfly's own order (offsets 16, 8, 4, 2, 1,
    lane ^ offset) written out, lane 0's value; and every lane ends holding the same total."""
    r = np.random.default_rng(3)
    for _ in range(20):
        v = (r.standard_normal(32) * 10.0 ** r.integers(-3, 4, 32)).astype(f32)
        t = v.copy()
        for off in (16, 8, 4, 2, 1):
            t = (t + t[np.arange(32) ^ off]).astype(f32)
        assert len(set(fb.bits(t).tolist())) == 1
        assert fb.bits(fb.xor_tree(v)) == fb.bits(t[0])


def test_a_block_of_1024_threads_is_the_largest():
    assert fb.block_sum(np.ones(1024, f32)) == f32(1024)


def test_float64_inputs_are_rounded_to_float32_before_the_product():
    """float32(0.1) is 0.1 + 1.49e-9: 10 x float32(0.1) - 1 is exactly 2^-26, where float64's 0.1 x 10 - 1 is 0."""
    assert fb.bits(fb.fma32(0.1, 10.0, -1.0)) == fb.bits(f32(2.0 ** -26))


def test_a_double_rounding_fix_in_an_array_leaves_the_other_elements_alone():
    a, b = np.uint32(1073323235).view(f32), np.uint32(855852666).view(f32)
    got = fb.fma32(np.array([a, 2.0], f32), np.array([b, 3.0], f32), np.array([1.0, 0.5], f32))
    assert got.dtype == f32 and got.tolist() == [float(np.nextafter(f32(1.0), f32(2.0))), 6.5]


def test_ulp_distance_across_zero_counts_both_sides():
    """-x and x are 2 x bits(x) steps apart (every float32 between them, through +0 and -0, counts once)."""
    one = 0x3F800000
    assert int(fb.ulp_distance(f32(-1.0), f32(1.0))) == 2 * one
    assert int(fb.ulp_distance(f32(-0.0), f32(0.0))) == 0
    assert int(fb.ulp_distance(f32(-2.0), f32(-1.0))) == 0x40000000 - one
    tiny = np.nextafter(f32(0), f32(1))
    assert int(fb.ulp_distance(-tiny, tiny)) == 2


def test_fma32_on_exact_float32_midpoints():
    """Two midpoint cases worked by hand. (1) 1 x 2^-24 + (1 + 2^-23) = 1 + 2^-23 + 2^-24 exactly: halfway, no
    rounding error, and nearest-even is the upper neighbour 1 + 2^-22. (2) a x b = 25/16 x 1,006,633/2^20 =
    1.5 + 2^-24 exactly (25 x 1,006,633 = 3 x 2^23 + 1), halfway between 1.5 (even) and 1.5 + 2^-23; c = 2^-60
    is below half a float64 ulp of 1.5, so the float64 sum rounds back onto the midpoint and only the error term
    (TwoSum's, = c) says to round up: 1.5 + 2^-23."""
    assert float(fb.fma32(f32(1), f32(2.0 ** -24), f32(1 + 2.0 ** -23))) == 1 + 2.0 ** -22
    a, b = f32(25 / 16), f32(1006633 / 2 ** 20)
    assert Fraction(float(a)) * Fraction(float(b)) == 1 + Fraction(1, 2) + Fraction(1, 2 ** 24)
    assert float(fb.fma32(a, b, f32(2.0 ** -60))) == 1.5 + 2.0 ** -23
    assert float(fb.fma32(a, b, f32(-(2.0 ** -60)))) == 1.5
    assert float(fb.fma32(a, b, f32(0))) == 1.5                                   # exactly halfway: to even
