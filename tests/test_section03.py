"""§3: the KDA decode step -- plans and refusals before launch, the float64 reference, diagnose(), and the
H200 recording's claims."""
import statistics

import numpy as np
import pytest

from launchlab import bandwidth, diagnosis, instruments, kda, kernels, mode, widgets


# ------------------------------------------------------------------ plans and refusals
def test_plans_follow_the_gates(clean_gates, monkeypatch):
    p = kda.plan(12)
    assert (p.bv, p.grid, p.block, p.blocks, p.mode) == (32, (4, 12), 256, 48, "rn")
    monkeypatch.setenv("LAUNCHLAB_KDA_VT", "0")
    monkeypatch.setenv("LAUNCHLAB_KDA_ELIDE", "store")
    p = kda.plan(12)
    assert (p.bv, p.grid, p.block, p.blocks, p.expr) == (128, (1, 12), 1024, 12, "kda_decode<0>")


def test_bytes_moved_is_the_lectures_figure():
    assert kda.bytes_moved(12, 128, "store") == pytest.approx(3.1e6, rel=0.03)
    assert kda.bytes_moved(12, 128, "rn") / kda.bytes_moved(12, 128, "store") == pytest.approx(0.75, abs=0.01)


@pytest.mark.parametrize("kw,match", [
    (dict(v=128, bv=24), "not a multiple of BV"), (dict(v=100, bv=32), "not a multiple of BV"),
    (dict(v=256, bv=256), "limit is BV <= 128"), (dict(v=128, bv=30), "multiple of 4"),
    (dict(v=128, bv=32, mode_="fast"), "mode must be"), (dict(v=0, bv=32), "V must be"),
])
def test_bad_geometry_refused(kw, match):
    with pytest.raises(kda.KDAError, match=match):
        kda.plan(12, **kw)


def _arrays(h=4, v=128, **over):
    a = {k: x for k, x in kda.inputs(h, v).items()}
    a["o"] = np.zeros((h, v), np.float32)
    a.update(over)
    return a


@pytest.mark.parametrize("over,match", [
    (dict(q=np.zeros((4, 64), np.float32)), "K=128"),
    (dict(k=np.zeros((5, 128), np.float32)), "5 heads, expected 4"),
    (dict(state=np.zeros((4, 128, 128), np.float64)), "float32"),
    (dict(beta=np.zeros(3, np.float32)), "beta must be"),
    (dict(state=np.zeros((4, 64, 128), np.float32)), "state must be"),
    (dict(o=np.zeros((4, 64), np.float32)), "o must be"),
])
def test_bad_inputs_refused(over, match):
    a = _arrays(**over)
    with pytest.raises(kda.KDAError, match=match):
        kda.validate(a["q"], a["k"], a["v"], a["g"], a["beta"], a["state"], a["o"], 4, 128)


def test_reference_is_column_local():
    """Splitting the value columns and stepping each part alone gives the same state and output."""
    h = kda.inputs(3, 128, seed=2)
    o, s = kda.reference(**h)
    parts = [kda.reference(h["q"], h["k"], h["v"][:, j:j + 32], h["g"], h["beta"], h["state"][:, j:j + 32])
             for j in range(0, 128, 32)]
    assert np.allclose(np.concatenate([p[0] for p in parts], axis=1), o, rtol=0, atol=1e-12)
    assert np.allclose(np.concatenate([p[1] for p in parts], axis=1), s, rtol=0, atol=1e-12)


def test_kernel_sass_shows_the_fma_trap_and_the_elided_store():
    if kernels.nvrtc_version() < (13, 5):
        pytest.skip("needs the pinned NVRTC 13.5")
    b = kernels.compile_offline("kda_decode")
    ops = {m: kernels.sass_instructions(b.sass(f"kda_decode<{i}>")) for m, i in kda.MODES.items()}
    assert ops["fma"].count("FFMA") - ops["rn"].count("FFMA") == 16 == ops["rn"].count("FMUL") - ops["fma"].count("FMUL")
    assert ops["store"].count("STG.E.128") == 2 * ops["rn"].count("STG.E.128")


# ------------------------------------------------------------------ diagnose()
def test_diagnose_the_lectures_case():
    reps = 87.0 + 0.982 * np.array([-1.3, -0.9, -0.6, -0.2, 0.0, 0.1, 0.3, 0.6, 1.0, 1.5]) / 0.9
    d = diagnosis.diagnose(3.1e6, reps, 3.44)
    assert d.verdict == "starvation" and 90 < d.ratio < 100 and d.spread < 0.02
    assert "not contention" in str(d)


def test_diagnose_synthetic_cases():
    rng = np.random.default_rng(0)
    assert diagnosis.diagnose(3.1e6, 1.0 + 0.01 * rng.random(20), 4.0).verdict == "bandwidth-bound"
    noisy = 5 + rng.exponential(5, 50)
    assert diagnosis.diagnose(3.1e6, noisy, 4.0).verdict == "contention"
    assert diagnosis.diagnose(1e3, [10.0] * 12, 4.0, flops=1e8, flop_rate_tflops=0.015).verdict == "arithmetic-bound"
    with pytest.raises(ValueError, match="at least 10 reps"):
        diagnosis.diagnose(3.1e6, [1.0] * 5, 4.0)


def test_diagnose_the_recorded_h200_data():
    d = kda.recorded()
    copy_tbs = bandwidth.recorded().copy_tbs
    dev = instruments.recorded().instruments
    base, tiled = d.diag.baseline, d.diag.tiled
    assert base.n >= 10 and tiled.n >= 10
    assert diagnosis.diagnose(d.diag.bytes_baseline, base.reps_us, copy_tbs,
                              fixed_us=dev.launch_graph_us).verdict == "starvation"
    assert diagnosis.diagnose(d.diag.bytes_tiled, tiled.reps_us, copy_tbs,
                              fixed_us=dev.launch_graph_us).verdict == "bandwidth-bound"
    alone, contended = d.contention.alone, d.contention.contended
    assert diagnosis.diagnose(d.diag.bytes_tiled, alone.reps_us, copy_tbs,
                              fixed_us=dev.launch_events_us).verdict == "bandwidth-bound"
    assert diagnosis.diagnose(d.diag.bytes_tiled, contended.reps_us, copy_tbs,
                              fixed_us=dev.launch_events_us).verdict == "contention"
    assert d.contention.background.still_running_at_end


def test_the_ceiling_and_launch_cost_doors_read_the_same_recordings():
    assert bandwidth.CEILING.recorded().tbs == bandwidth.recorded().copy_tbs
    assert instruments.LAUNCH_COSTS.recorded() == instruments.recorded().instruments


# ------------------------------------------------------------------ the H200 recording
@pytest.mark.parametrize("key", ["compare", "compare_96"])
def test_recorded_byte_identity_and_the_trap(key):
    c = getattr(kda.recorded(), key)
    for name, r in c.variants.items():
        assert r.rel_err_o < 1e-5 and r.rel_err_state < 1e-5, name      # every arm passes tolerance
        if r.mode == "fma":
            assert not r.identical_to_baseline and r.state_elements_differing > 0   # ...the trap moves bytes
        else:
            assert r.identical_to_baseline, name


def test_recorded_speed_goals():
    d = kda.recorded()
    base, tiled = d.baseline(8).timing.median, d.tiled(8).timing.median
    assert base / tiled >= 1.8                                              # value-tiled >= 1.8x the baseline
    assert d.abba.ratio() < 1 / 1.8
    fla = statistics.median(d.fla.timing.reps_us)
    assert tiled <= 1.25 * fla and d.fla.rel_err_o < 1e-5                   # within 1.25x of FLA, same answer


def test_tp_sweep_baseline_collapses_tiled_holds():
    d = kda.recorded()
    assert d.baseline(8).tbs < d.baseline(1).tbs / 5                        # 96 -> 12 blocks: bandwidth collapses
    assert d.tiled(8).tbs > 1.5 * d.baseline(8).tbs
    assert d.point(8, kda.V, "store") is d.baseline(8)
    with pytest.raises(KeyError, match="tp=3"):
        d.point(3, 32, "rn")


def test_headline_figures():
    h = kda.headline(kda.recorded())
    d = kda.recorded()
    assert h["kda_tiled_speedup_12h"] == d.diag.baseline.median / d.diag.tiled.median
    assert h["kda_baseline_blocks_12h"] == 12 and h["kda_tiled_blocks_12h"] == 48
    assert h["kda_rn_byte_identical"] is True and h["kda_fma_byte_identical"] is False
    assert 0.5 < h["kda_vs_fla_12h"] < 1.25


@pytest.mark.skipif(mode.is_live(), reason="replay values")
def test_kda_explorer():
    ex = widgets.KDAExplorer(kda.recorded())
    tp, bv = ex.widget().children[0].children
    tp.value = 1
    bv.value = 128
    assert "96 heads" in ex.shown and "grid 1 x 96 = 96 blocks" in ex.shown and "73%" in ex.shown
    r = ex.update(8, 32)
    assert r["blocks"] == 48 and r["sms"] == 48 and r["source"] == "recorded"
    assert r["us"] == kda.recorded().tiled(8).timing.median


# ------------------------------------------------------------------ robust spread and geometry (issue 9, items 5 and 6)
def test_one_slow_rep_moves_the_stddev_not_the_robust_spread():
    reps = [4.42] * 150 + [4.40] * 149 + [925.0]
    assert diagnosis.robust_spread(reps) < 0.01
    d = diagnosis.diagnose(3.1e6, reps, 4.27, fixed_us=3.0)
    assert d.stddev_spread > 1.0 and d.verdict == "bandwidth-bound"


def test_the_recorded_contention_is_called_from_its_robust_spread():
    d = kda.recorded()
    alone, cont = d.contention.alone, d.contention.contended
    assert diagnosis.robust_spread(alone.reps_us) < diagnosis.TIGHT < diagnosis.NOISY < diagnosis.robust_spread(cont.reps_us)
    assert max(cont.reps_us) > 50 * cont.median            # the one rep that blew up the stddev


def test_geometry_is_evidence_far_and_tight_on_a_full_grid_is_not_starvation():
    reps = 87.0 + 0.01 * np.arange(10)
    starved = diagnosis.diagnose(3.1e6, reps, 3.44, geometry=diagnosis.Geometry(12, 132))
    assert starved.verdict == "starvation" and any("12 SMs with work (9%)" in r for r in starved.reasons)
    full = diagnosis.diagnose(3.1e6, reps, 3.44, geometry=diagnosis.Geometry(264, 132, 2))
    assert full.verdict == "unclear" and any("look inside the block" in r for r in full.reasons)
    bare = diagnosis.diagnose(3.1e6, reps, 3.44)
    assert bare.verdict == "starvation" and any("inferred, not checked" in r for r in bare.reasons)


def test_kda_geometry_comes_from_the_plan_and_the_calculator():
    g = kda.geometry(12, kda.V, "store")
    regs, smem = kernels.resources("kda_decode", kda.plan(12, kda.V, kda.V, "store").expr)
    from launchlab import occupancy
    assert g.blocks == 12 and g.sms_with_work == 12
    assert g.blocks_per_sm == occupancy.occupancy(1024, regs, smem).blocks_per_sm
    assert kda.geometry(12, kda.BV_TILED, "rn").blocks == 48


def test_the_lectures_end_to_end_numbers_imply_a_kernel_speedup():
    e = kda.LECTURE_PR77
    assert e.kda_ms_before == pytest.approx(6.249, abs=1e-3)
    assert e.kda_ms_after == pytest.approx(6.249 - 3.33, abs=1e-3)
    assert e.kernel_speedup == pytest.approx(2.14, abs=0.01)
    assert e.tok_s_after / e.tok_s_before - 1 == pytest.approx(0.067, abs=0.001)
    assert e.token_gain_from(e.kernel_speedup) == pytest.approx(e.ms_before / e.ms_after - 1, rel=1e-9)
    assert 70 < e.launches_per_token < 73
