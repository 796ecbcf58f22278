"""§2: the RMS norm family -- plans, refusals, the bit-exact emulation, and the H200 recording's claims."""
from fractions import Fraction

import numpy as np
import pytest

from launchlab.core import compiler, floatbits, launch, mode, sass

from launchlab.sections.s02_width import explorers
from launchlab.kernels import rms_norm
from launchlab.sections.s02_width import frontier, rmsnorm
from conftest import need


# ------------------------------------------------------------------ float32 emulation primitives
def _exact_fma32(a, b, c):
    ex = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    f = np.float32(float(ex))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    return min(cands, key=lambda v: (abs(Fraction(float(v)) - ex), int(np.array(v).view(np.uint32)) & 1))


def test_fma32_matches_exact_rounding():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(400).astype(np.float32)
    c = (rng.standard_normal(400) * 50).astype(np.float32)
    got = floatbits.fma32(a, a, c)
    assert all(got[i] == _exact_fma32(a[i], a[i], c[i]) for i in range(400))


def test_fma32_resolves_the_double_rounding_midpoint():
    # a*a = 1 + 2^-11 + 2^-24 (a float32 midpoint); c = 2^-80 pushes the exact value just above it.
    a = np.float32(1 + 2.0 ** -12)
    c = np.float32(2.0 ** -80)
    naive = np.float32(np.float64(a) * np.float64(a) + np.float64(c))   # float64 then float32: rounds to even
    exact = floatbits.fma32(a, a, c)
    assert exact == _exact_fma32(a, a, c)
    assert exact != naive and exact == np.float32(1 + 2.0 ** -11 + 2.0 ** -23)


def test_block_sum_is_the_xor_tree():
    v = np.arange(128, dtype=np.float32)
    assert floatbits.block_sum(v[None])[0] == np.float32(v.sum())
    assert floatbits.xor_tree(np.ones((3, 32), np.float32)).tolist() == [32.0, 32.0, 32.0]


# ------------------------------------------------------------------ plans and refusals (before any launch)
def test_plans_follow_gates_width_and_alignment(clean_gates, monkeypatch):
    """Geometry from the shape: the width and one alignment flag, no arrays."""
    assert rms_norm.plan(7168) == rms_norm.Plan("rms_norm_wide<true>", 1024, True, 128)
    assert rms_norm.plan(2048).block == 512
    assert rms_norm.plan(7168, aligned=False).expr == "rms_norm_wide<false>"          # misaligned view
    assert rms_norm.plan(7166).expr == "rms_norm_wide<false>"                         # n % 4 != 0
    assert rms_norm.plan(7166, block=128).expr == "rms_norm_f32"                      # stays on the original
    assert rms_norm.plan(7168, reduce="wide").reduce_threads == 1024
    monkeypatch.setenv("LAUNCHLAB_RMS_WIDE", "0")
    assert rms_norm.plan(7168).expr == "rms_norm_f32"
    assert rms_norm.plan(7168).bytes_in_flight == 512
    assert rms_norm.plan(7168, wide=True).bytes_in_flight == 16384


def test_alignment_is_read_off_the_arrays_by_the_launcher():
    x = np.zeros(7168 + 8, np.float32)
    off = (-launch.address(x) % 16) // 4            # numpy allocations are 4-byte aligned at least
    a, b = x[off:off + 7168], x[off + 1:off + 1 + 7168]
    assert launch.aligned16(a, a) and not launch.aligned16(a, b)
    assert rms_norm.plan(7168, launch.aligned16(a, a, a)).expr == "rms_norm_wide<true>"
    assert rms_norm.plan(7168, launch.aligned16(a, b, a)).expr == "rms_norm_wide<false>"


@pytest.mark.parametrize("n", [0, -4, 2.5, True])
def test_bad_widths_refused_by_the_plan(n):
    with pytest.raises(rms_norm.RMSNormError, match="positive integer"):
        rms_norm.plan(n)


@pytest.mark.parametrize("block", [64, 100, 2048, 96])
def test_bad_blocks_refused(block):
    with pytest.raises(rms_norm.RMSNormError, match="128 to 1024"):
        rms_norm.plan(4096, block=block, wide=True)


@pytest.mark.parametrize("kw,match", [
    (dict(n=0), "positive integer"), (dict(eps=-1e-6), "eps must be"), (dict(eps=float("nan")), "eps must be"),
    (dict(w=np.zeros(10, np.float32)), "weight has 10"), (dict(x=np.zeros(100, np.float32)), "whole number of rows"),
    (dict(x=np.zeros(64, np.float64)), "float32"), (dict(y=np.zeros(32, np.float32)), "y has 32"),
])
def test_bad_inputs_refused(kw, match):
    args = dict(x=np.zeros(64, np.float32), w=np.zeros(32, np.float32), y=np.zeros(64, np.float32), n=32, eps=1e-6)
    args.update(kw)
    with pytest.raises(rms_norm.RMSNormError, match=match):
        rms_norm.validate(**args)


def test_the_two_identity_facts_hold_on_data():
    f = rmsnorm.identity_facts(rms_norm.rows(11, 5120, 64), 5120)
    assert f == {"rows": 64, "x_plus_zero_is_x": 64, "idle_warps_sum_to_plus_zero": 64,
                 "cross_warp_lanes_identical": 64, "ss_identical": 64}


def test_emulation_is_close_to_float64():
    xs, w = rms_norm.rows(2, 4096, 16), rms_norm.weight(4096)
    ss = rms_norm.emulate_ss(xs, 4096)
    ref = (xs.astype(np.float64) ** 2).sum(axis=1)
    assert np.max(np.abs(ss - ref) / ref) < 1e-5
    inv = (1 / np.sqrt(rms_norm.rsqrt_arg(ss, 4096).astype(np.float64))).astype(np.float32)
    assert np.max(np.abs(rms_norm.apply(xs, w, inv) - rms_norm.reference(xs, w))) < 1e-5


def test_sass_widened_apply_is_128_bit():
    need("nvrtc")                   # the offline report is parsed from the pinned NVRTC's ptxas log
    b = compiler.compile_offline("rms_norm")
    ops = {e: set(sass.sass_instructions(b.sass(e))) for e in ("rms_norm_f32", "rms_norm_wide<true>")}
    assert "LDG.E.128.CONSTANT" in ops["rms_norm_wide<true>"] and "STG.E.128" in ops["rms_norm_wide<true>"]
    assert not any(".128" in o for o in ops["rms_norm_f32"])


# ------------------------------------------------------------------ the H200 recording
@pytest.fixture(scope="module")
def rec():
    return rmsnorm.recorded()


@pytest.mark.parametrize("n", rmsnorm.WIDTHS)
def test_recorded_byte_identity_and_emulation(rec, n):
    c = rec.identity_at(n)
    assert c.rows >= 10000 and c.wide_identical and c.ss_wide_identical
    assert c.ss_rows_emulated("narrow") == c.ss_rows_emulated("wide") == c.rows
    assert c.apply_emulation_matches_gpu
    assert max(c.max_rel_err_vs_float64.values()) < 1e-6
    # the widened reduction: ss moves on some rows, the output on fewer (rsqrtf absorbs some), by ~1e-7
    assert 0 < c.reduce_out_rows_changed <= c.reduce_inv_rows_changed <= c.reduce_ss_rows_changed < c.rows
    assert 1e-8 < c.reduce_out_max_rel_change < 1e-6


@pytest.mark.parametrize("n", [2048, 7168])
def test_emulation_reproduces_recorded_gpu_bits_here(rec, n):
    c = rec.identity_at(n)
    k = 128
    xs = rms_norm.rows(c.seed, n, k)
    assert floatbits.bits(rms_norm.emulate_ss(xs, n)).tolist() == c.gpu_ss_bits("original")[:k].tolist()
    wide = rms_norm.emulate_ss(xs, n, c.plan("wide_reduce").reduce_threads)
    assert floatbits.bits(wide).tolist() == c.gpu_ss_bits("wide_reduce")[:k].tolist()


def test_recorded_fallbacks_are_exact(rec):
    assert len(rec.fallback) >= 4
    for f in rec.fallback:
        assert f.identical
        assert f.vec == (f.n % 4 == 0 and f.offset_floats % 4 == 0)


def test_recorded_speed(rec):
    """Goal: widened >= 20% faster than the original at 7168, and faster than CuPy array ops everywhere."""
    t = rec.times(7168)
    assert t.wide.median <= 0.8 * t.original.median
    for n in rmsnorm.WIDTHS:
        tt = rec.times(n)
        assert tt.wide.median < tt.original.median < tt.cupy.median
    assert rec.abba.order == ["A", "B", "B", "A", "A", "B"] and rec.abba.ratio() < 0.8


def test_frontier_model():
    rs = frontier.lecture_rounds()
    assert [r.scores for r in rs] == [False, False, False]
    assert rs[-1].main_tok_s / rs[0].main_tok_s - 1 == pytest.approx(0.625, abs=0.01)   # "roughly 63%"
    assert frontier.gain(50.0, 1.0) == pytest.approx(50 / 49 - 1)
    s = 0.5
    edge = frontier.clears_gate_below(s)
    assert frontier.gain(edge * 0.99, s) > 0.02 > frontier.gain(edge * 1.01, s)
    assert frontier.norm_saving_ms(4.0, 3.0) == pytest.approx(0.327)


@pytest.mark.skipif(mode.is_live(), reason="replay values")
def test_rms_explorer(rec):
    ex = explorers.RMSExplorer(rec)
    nb, bb = ex.widget().children[0].children
    nb.value = 4096
    bb.value = 256
    assert "width 4096" in ex.shown and "at block 256" in ex.shown and "recorded" in ex.shown
    r = ex.update(7168, 1024)
    assert r["original_in_flight"] == 512 and r["wide_in_flight"] == 16384
    assert r["wide_us"] == rec.times(7168).wide_blocks[1024].median and r["source"] == "recorded"


def test_headline_figures(rec):
    h = rmsnorm.headline(rec)
    t = rec.times(7168)
    assert h["rms_speedup_7168"] == t.original.median / t.wide.median > 1.25
    assert h["rms_wide_byte_identical_all_widths"] is True and h["rms_fallbacks_byte_identical"] is True


def test_many_rows_drawn_in_threads_are_the_rows_drawn_one_by_one():
    many = rms_norm.rows(11, 2048, 1500, start=7)
    assert many.shape == (1500, 2048) and many.dtype == np.float32
    assert np.array_equal(many, np.stack([rms_norm.row(11, 2048, r) for r in range(7, 1507)]))


def test_identity_counts_by_runs_of_rows_equal_one_pass_over_all_rows():
    """compare_rows' CPU side runs on runs of rows side by side; its counts and maxima must be those of one pass
    over every row (here on outputs made on the CPU: the emulated original, and a 'reduction' that changes
    some rows' ss)."""
    n, count = 1024, 97
    xs = rms_norm.rows(11, n, count)
    w = rms_norm.weight(n)
    ss = rms_norm.emulate_ss(xs, n)
    inv = (1.0 / np.sqrt(rms_norm.rsqrt_arg(ss, n).astype(np.float64))).astype(np.float32)
    o = rms_norm.apply(xs, w, inv)
    ss_r = ss.copy()
    ss_r[::7] = np.nextafter(ss_r[::7], np.float32(np.inf))
    inv_r = (1.0 / np.sqrt(rms_norm.rsqrt_arg(ss_r, n).astype(np.float64))).astype(np.float32)
    wr = rms_norm.apply(xs, w, inv_r)
    chain = o.copy()
    outs = {"original": o, "wide": o.copy(), "wide_reduce": wr, "original_chain": chain, "wide_chain": o.copy()}
    stats = {k: np.stack([ss, inv], axis=1) for k in outs}
    stats["wide_reduce"] = np.stack([ss_r, inv_r], axis=1)
    one = rmsnorm.identity_counts(xs, w, outs, stats, 1024, workers=1)
    runs = rmsnorm.identity_counts(xs, w, outs, stats, 1024, workers=3)
    assert one == runs
    diff = o.view(np.uint32) != wr.view(np.uint32)
    assert runs["reduce_out_rows_changed"] == int(np.any(diff, axis=1).sum()) > 0
    assert runs["reduce_out_elements_changed"] == int(diff.sum())
    assert runs["wide_identical"] and runs["chain_identical"] and runs["apply_emulation_matches_gpu"]
    assert runs["emulation_ss_matches_gpu"]["narrow"] == count
    ref = rms_norm.reference(xs, w)
    assert runs["max_rel_err_vs_float64"]["original"] == float(np.max(np.abs(o - ref) / np.abs(ref)))
    chain[5, 3] += 1.0
    assert not rmsnorm.identity_counts(xs, w, outs, stats, 1024, workers=3)["chain_identical"]
    assert rms_norm.row_chunks(10, 3) == [(0, 3), (3, 6), (6, 10)] and rms_norm.row_chunks(2, 8) == [(0, 1), (1, 2)]
