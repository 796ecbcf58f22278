"""MLA decode: the bf16 conversions, the float64 reference, the error bound and the input checks (any
machine); both kernel bodies against the reference and inside the bound on a GPU (tests marked gpu)."""
import numpy as np
import pytest

from launchlab.core import mode
from launchlab.kernels import mla

live = pytest.mark.skipif(not mode.is_live(), reason="needs a GPU")


def test_bf16_round_trip_and_round_to_nearest_even():
    x = np.array([1.0, -2.5, 3.0e-3, 65504.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8], np.float32)
    b = mla.to_bf16(x)
    assert mla.from_bf16(b)[0] == 1.0 and mla.from_bf16(b)[1] == -2.5
    assert mla.from_bf16(b)[4] == 1.0                     # a tie rounds to even (down)
    assert mla.from_bf16(b)[5] == 1 + 2 ** -6             # a tie rounds to even (up)
    assert np.array_equal(mla.to_bf16(mla.from_bf16(b)), b)
    # the largest finite floats round without wrapping, as the widened (uint64) arithmetic does
    big = np.array([np.finfo(np.float32).max, -np.finfo(np.float32).max, 3.3895314e38, -1e-45], np.float32)
    u = big.view(np.uint32).astype(np.uint64)
    assert np.array_equal(mla.to_bf16(big), ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16))
    assert mla.to_bf16(x).base is None or not np.shares_memory(mla.to_bf16(x), x)    # the input is left alone


def test_bf16_rounding_a_chunk_at_a_time_matches_the_widened_arithmetic_across_chunk_edges():
    """to_bf16 works in chunks (one reused buffer): a chunk of 7 over 1,000 values, with ties and the extremes
    placed on chunk edges, gives the same bits as the whole array in uint64, and keeps the input's shape."""
    r = np.random.default_rng(5)
    x = (r.standard_normal((8, 125)) * 10.0 ** r.integers(-30, 30, (8, 125))).astype(np.float32)
    flat = x.reshape(-1)
    flat[[0, 6, 7, 13, 14, 999]] = [1 + 2 ** -8, 1 + 3 * 2 ** -8, np.finfo(np.float32).max,
                                    -np.finfo(np.float32).max, -1e-45, 65504.0]
    u = x.view(np.uint32).astype(np.uint64)
    want = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    for chunk in (1, 7, 1000, 1 << 18):
        got = mla.to_bf16(x, chunk=chunk)
        assert got.shape == x.shape and got.dtype == np.uint16
        assert np.array_equal(got, want), chunk


def test_reference_is_a_softmax_average_of_the_latent():
    d = mla.inputs(1, 2, 5, seed=1)
    o = mla.reference(d["q"], d["kv"], d["scale"])
    kv = mla.from_bf16(d["kv"]).astype(np.float64)[0, :, :512]
    assert o.shape == (1, 2, 512)
    assert np.all(o <= kv.max(axis=0) + 1e-12) and np.all(o >= kv.min(axis=0) - 1e-12)   # a convex combination
    one = mla.reference(d["q"], d["kv"][:, :1], d["scale"])
    assert np.allclose(one[0, 0], kv[0])                                                # one token: itself


def test_bf16_s_unit_roundoff_is_two_to_the_minus_eight_as_measured():
    """bf16 keeps 8 significand bits (7 stored): round to nearest moves a value by at most 2^-8 of itself, and a
    million values in [1, 2) come within 0.5 % of that (measured 0.00389)."""
    x = np.random.default_rng(0).uniform(1, 2, 10 ** 6).astype(np.float32)
    rel = np.abs(mla.from_bf16(mla.to_bf16(x)).astype(np.float64) - x) / x
    assert mla.U_BF16 == 2.0 ** -8
    assert 0.995 * mla.U_BF16 < rel.max() <= mla.U_BF16


def test_the_bound_holds_a_one_bf16_ulp_weight_error_and_catches_one_and_a_half():
    """The bound's dominant term is the bf16 rounding of the weights P: one bf16 ulp (2^-7 at 1.0, twice the
    unit roundoff) of relative error on every weight. A float32 evaluation of the same softmax sits far inside
    it; every weight pushed one ulp the way its token's column-0 value leans (the worst direction for that
    column) stays inside (0.96 of the bound here); one and a half ulps is outside."""
    d = mla.inputs(1, 16, 700, seed=3)
    p = mla.plan(1, 16, 700)
    bound = mla.error_bound(d["q"], d["kv"], d["scale"], p)
    ref = mla.reference(d["q"], d["kv"], d["scale"])
    q, kv = mla.from_bf16(d["q"]), mla.from_bf16(d["kv"])
    s = np.einsum("bhd,btd->bht", q, kv) * np.float32(d["scale"])
    w = np.exp(s - s.max(axis=2, keepdims=True))
    w32 = (w / w.sum(axis=2, keepdims=True)).astype(np.float32)
    out32 = np.einsum("bht,btc->bhc", w32, kv[:, :, :512])
    assert mla.max_error_over_bound(out32, ref, bound) < 0.05
    v0 = kv[:, :, 0].astype(np.float64)
    ulp = 2.0 ** -7                                     # one bf16 ulp, relative, at 1.0

    def pushed(ulps):
        w_bad = w32.astype(np.float64) * (1 + ulps * ulp * np.sign(v0)[:, None, :])
        w_bad /= w_bad.sum(axis=2, keepdims=True)
        out = np.einsum("bht,btc->bhc", w_bad, kv[:, :, :512].astype(np.float64))
        return mla.max_error_over_bound(out, ref, bound)
    assert 0.5 < pushed(1) <= 1 < pushed(1.5)


def test_plans_pin_two_blocks_per_sm_and_residency_padding_pins_one():
    for pipeline in ("off", "cp.async"):
        p = mla.plan(1, 16, 131_072, "derived", pipeline)
        assert p.grid == (256, 1, 1) and p.blocks_per_sm == 2
        assert mla.plan(1, 16, 131_072, "derived", pipeline, resident=1).blocks_per_sm == 1
    assert mla.plan(1, 16, 131_072, "hardcoded", "off").grid == (128, 1, 1)
    assert mla.smem_bytes("off") == 96_000
    assert mla.plan(1, 16, 131_072, pipeline="cp.async-3").blocks_per_sm == 1      # three stages: one per SM


@pytest.mark.parametrize("kw, match", [
    (dict(n_splits=2000), "beyond the cap"),
    (dict(n_splits=5000, ctx=100), "empty"),
    (dict(pipeline="tma"), "pipeline must be"),
    (dict(resident=3), "resident must be"),
])
def test_bad_plans_are_refused(kw, match):
    ctx = kw.pop("ctx", 131_072)
    with pytest.raises(mla.MLAError, match=match):
        mla.plan(1, 16, ctx, **kw)


@pytest.mark.parametrize("bad, match", [
    (dict(q=np.zeros((1, 16, 576), np.float32)), "bf16 bits"),
    (dict(kv=np.zeros((1, 8, 512), np.uint16)), r"\(batch, rows, 576\)"),
    (dict(kv=np.zeros((1, 0, 576), np.uint16)), "ctx = 0"),
    (dict(kv=np.zeros((2, 8, 576), np.uint16)), "requests"),
    (dict(kv=np.zeros((1, 8, 1152), np.uint16)[:, :, ::2]), "contiguous"),
    (dict(kv=np.zeros(8 * 576 + 1, np.uint16)[1:].reshape(1, 8, 576)), "16-byte boundary"),
])
def test_bad_inputs_are_refused_before_any_launch(bad, match):
    kw = dict(q=np.zeros((1, 16, 576), np.uint16), kv=np.zeros((1, 8, 576), np.uint16)) | bad
    with pytest.raises(mla.MLAError, match=match):
        mla.validate(kw["q"], kw["kv"])


@pytest.mark.gpu
@live
@pytest.mark.parametrize("pipeline", ["off", "cp.async", "cp.async-3"])
@pytest.mark.parametrize("batch, n_head, ctx, kw", [
    (1, 16, 64, {}), (1, 16, 100_003, {}), (2, 16, 20_000, {"floor": "hardcoded"}), (1, 20, 9000, {}),
    (1, 16, 5000, {"n_splits": 37}), (1, 16, 30_000, {"resident": 1}), (1, 3, 333, {"n_splits": 4}),
    (1, 16, 1, {})])
def test_the_kernel_matches_the_reference_inside_the_bound(pipeline, batch, n_head, ctx, kw):
    import cupy as cp
    d = mla.inputs(batch, n_head, ctx)
    out, p = mla.decode(cp.asarray(d["q"]), cp.asarray(d["kv"]), d["scale"], pipeline=pipeline, **kw)
    ref = mla.reference(d["q"], d["kv"], d["scale"])
    ratio = mla.max_error_over_bound(cp.asnumpy(out), ref, mla.error_bound(d["q"], d["kv"], d["scale"], p))
    assert ratio <= 1.0, (ratio, p.describe())


@pytest.mark.gpu
@live
def test_same_split_count_same_bytes_different_count_different_bytes():
    import cupy as cp
    d = mla.inputs(1, 16, 20_000)
    q, kv = cp.asarray(d["q"]), cp.asarray(d["kv"])
    a = cp.asnumpy(mla.decode(q, kv, d["scale"], n_splits=40)[0]).tobytes()
    b = cp.asnumpy(mla.decode(q, kv, d["scale"], n_splits=40)[0]).tobytes()
    c = cp.asnumpy(mla.decode(q, kv, d["scale"], n_splits=41)[0]).tobytes()
    assert a == b and a != c


@pytest.mark.gpu
@live
def test_host_arrays_get_a_clear_error():
    d = mla.inputs(1, 16, 64)
    with pytest.raises(mla.MLAError, match="CuPy arrays"):
        mla.decode(d["q"], d["kv"], d["scale"])
