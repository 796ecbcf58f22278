"""§3: the KDA decode step -- plans and refusals before launch, the float64 reference, diagnose(), and the
H200 recording's claims."""
import statistics
from pathlib import Path

import numpy as np
import pytest

from launchlab.core import compiler, diagnosis, loader, mode, sass

from launchlab.sections.s03_starvation import explorers
from launchlab.kernels import kda_decode
from launchlab.sections.s00_start import instruments
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s03_starvation import kda
from conftest import need


# ------------------------------------------------------------------ plans and refusals
def test_plans_follow_the_gates(clean_gates, monkeypatch):
    p = kda_decode.plan(12)
    assert (p.bv, p.grid, p.block, p.blocks, p.mode) == (32, (4, 12), 256, 48, "rn")
    monkeypatch.setenv("LAUNCHLAB_KDA_VT", "0")
    monkeypatch.setenv("LAUNCHLAB_KDA_ELIDE", "store")
    p = kda_decode.plan(12)
    assert (p.bv, p.grid, p.block, p.blocks, p.expr) == (128, (1, 12), 1024, 12, "kda_decode<0>")


def test_bytes_moved_is_the_lectures_figure():
    assert kda_decode.bytes_moved(12, 128, "store") == pytest.approx(3.1e6, rel=0.03)
    assert kda_decode.bytes_moved(12, 128, "rn") / kda_decode.bytes_moved(12, 128, "store") == pytest.approx(0.75, abs=0.01)


@pytest.mark.parametrize("kw,match", [
    (dict(v=128, bv=24), "not a multiple of BV"), (dict(v=100, bv=32), "not a multiple of BV"),
    (dict(v=256, bv=256), "limit is BV <= 128"), (dict(v=128, bv=30), "multiple of 4"),
    (dict(v=128, bv=32, mode_="fast"), "mode must be"), (dict(v=0, bv=32), "V must be"),
])
def test_bad_geometry_refused(kw, match):
    with pytest.raises(kda_decode.KDAError, match=match):
        kda_decode.plan(12, **kw)


def _arrays(h=4, v=128, **over):
    a = {k: x for k, x in kda_decode.inputs(h, v).items()}
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
    with pytest.raises(kda_decode.KDAError, match=match):
        kda_decode.validate(a["q"], a["k"], a["v"], a["g"], a["beta"], a["state"], a["o"], 4, 128)


def test_reference_is_column_local():
    """Splitting the value columns and stepping each part alone gives the same state and output."""
    h = kda_decode.inputs(3, 128, seed=2)
    o, s = kda_decode.reference(**h)
    parts = [kda_decode.reference(h["q"], h["k"], h["v"][:, j:j + 32], h["g"], h["beta"], h["state"][:, j:j + 32])
             for j in range(0, 128, 32)]
    assert np.allclose(np.concatenate([p[0] for p in parts], axis=1), o, rtol=0, atol=1e-12)
    assert np.allclose(np.concatenate([p[1] for p in parts], axis=1), s, rtol=0, atol=1e-12)


def test_kernel_sass_shows_the_fma_trap_and_the_elided_store():
    need("nvrtc")                   # the offline report is parsed from the pinned NVRTC's ptxas log
    b = compiler.compile_offline("kda_decode")
    ops = {m: sass.sass_instructions(b.sass(f"kda_decode<{i}>")) for m, i in kda_decode.MODES.items()}
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
    """Issue 9's bar: main's kernel, cold, >= 30x its floor with a robust spread <= 2 %, called starvation from
    the measurement -- with and without a launch's fixed cost in the floor."""
    d = kda.recorded()
    copy_tbs = bandwidth.recorded().copy_tbs
    dev = instruments.recorded().instruments
    main = d.main
    assert (main.body, main.bv, main.mode, main.blocks, main.block) == ("walk", 128, "store", 12, 128)
    assert main.cold.n >= 10 and main.cold.l2 == "cold" and main.hot.l2 == "hot"
    g = kda.diagnose_rung(main, copy_tbs)
    assert g.verdict == "starvation" and g.ratio >= 30 and g.spread <= 0.02
    assert g.geometry.sms_with_work == 12
    assert diagnosis.diagnose(main.bytes, main.cold.reps_us, copy_tbs, fixed_us=dev.launch_graph_us,
                              geometry=g.geometry).verdict == "starvation"
    alone, contended = d.contention.alone, d.contention.contended
    assert alone.l2 == contended.l2 == "cold"
    tiled = d.tuned.bytes
    assert diagnosis.diagnose(tiled, alone.reps_us, copy_tbs, fixed_us=dev.launch_events_us).verdict == "bandwidth-bound"
    assert diagnosis.diagnose(tiled, contended.reps_us, copy_tbs,
                              fixed_us=dev.launch_events_us).verdict == "contention"
    assert d.contention.background.still_running_at_end


def test_the_fix_one_change_at_a_time():
    """Every corner of body x BV x mode was timed cold and hot at 12 heads; the ladder's steps all help
    (cold), and the fix is what the lecture says: 12 -> 48 blocks on main's 128-thread kernel."""
    d = kda.recorded()
    assert {r.name for r in d.ladder} == {kda.variant_name(*arm) for arm in kda.CUBE}
    for r in d.ladder:
        assert r.cold.l2 == "cold" and r.hot.l2 == "hot" and r.cold.n >= 10
        assert r.cold.median > r.hot.median * 0.95             # the state from HBM is never much faster
    cold = [d.rung(*arm).cold.median for arm in kda.LADDER]
    assert cold[0] / cold[1] > 2 and cold[2] / cold[3] > 2    # geometry, then loads in flight, each > 2x
    assert d.fixed.blocks == 48 and d.fixed.block == 128
    assert d.abba.ratio() < 1 / 2                              # the A/B: main vs the fix, cold


def test_hot_bandwidth_can_beat_hbm_cold_cannot():
    """The reason floors need cold times: at 96 heads the hot step 'reads' faster than the copy ceiling."""
    d = kda.recorded()
    ceiling = bandwidth.recorded().copy_tbs
    assert max(p.tbs for p in d.sweep) > ceiling
    assert max(p.tbs_cold for p in d.sweep) < ceiling


def test_mains_time_does_not_follow_its_bytes():
    d = kda.recorded()
    t = [d.point(tp, kda_decode.V, "store", "walk").cold.median for tp in (8, 4, 2, 1)]
    assert max(t) / min(t) < 1.25                              # 8x the bytes, about the same time


def test_starvation_headline_is_in_the_summary():
    h = kda.starvation_headline(kda.recorded(), bandwidth.CEILING.recorded())
    assert h["main_kernel_ratio"] >= 30 and h["main_kernel_spread_pct"] <= 2 and h["main_kernel_starvation"]
    assert h["main_kernel_ratio"] > h["fix_ratio"] > h["tuned_ratio"]


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
    assert base / tiled >= 1.8                                              # tuned: value-tiled >= 1.8x (hot)
    assert d.fla.measured, d.fla.error
    fla = statistics.median(d.fla.timing.reps_us)
    assert tiled <= 1.25 * fla and d.fla.rel_err_o < 1e-5                   # within 1.25x of FLA, same answer
    assert d.tuned.cold.median <= 1.25 * d.fla.cold.median and d.fla.cold.l2 == "cold"


def test_tp_sweep_baseline_collapses_tiled_holds():
    d = kda.recorded()
    main8, main1 = (d.point(tp, kda_decode.V, "store", "walk") for tp in (8, 1))
    assert main8.tbs_cold < main1.tbs_cold / 5                               # 96 -> 12 blocks: bandwidth collapses
    assert d.tiled(8).tbs_cold > 1.5 * main8.tbs_cold
    assert d.point(8, kda_decode.V, "store") is d.baseline(8)
    assert all(p.cold is not None and p.cold.l2 == "cold" for p in d.sweep)
    with pytest.raises(KeyError, match="tp=3"):
        d.point(3, 32, "rn")


def test_headline_figures():
    h = kda.headline(kda.recorded())
    d = kda.recorded()
    assert h["kda_tiled_speedup_12h"] == d.baseline(8).timing.median / d.tiled(8).timing.median
    assert h["fix_speedup_cold"] == pytest.approx(h["fix_geometry_speedup_cold"] * h["fix_elision_speedup_cold"])
    assert h["main_to_tuned_speedup_cold"] == pytest.approx(h["fix_speedup_cold"] * h["tuned_over_fix_speedup_cold"])
    assert h["kda_baseline_blocks_12h"] == 12 and h["kda_tiled_blocks_12h"] == 48
    assert h["kda_rn_byte_identical"] is True and h["kda_fma_byte_identical"] is False
    assert 0.5 < h["kda_vs_fla_12h"] < 1.25


@pytest.mark.skipif(mode.is_live(), reason="replay values")
def test_kda_explorer():
    ex = explorers.KDAExplorer(kda.recorded())
    tp, bv, body = ex.widget().children[0].children
    tp.value = 1
    bv.value = 128
    assert "96 heads" in ex.shown and "grid 1 x 96 = 96 blocks" in ex.shown and "73%" in ex.shown
    body.value = "walk"
    assert "walk body" in ex.shown and "of 128 threads, 32 columns per warp" in ex.shown
    r = ex.update(8, 32)
    assert r["blocks"] == 48 and r["sms"] == 48 and r["source"] == "recorded"
    assert r["us"] == kda.recorded().tiled(8).timing.median
    assert ex.update(8, 32, "walk")["us"] == kda.recorded().point(8, 32, "rn", "walk").timing.median


# ------------------------------------------------------------------ robust spread and geometry (issue 9, items 5 and 6)
def test_one_slow_rep_moves_the_stddev_not_the_robust_spread():
    reps = [4.42] * 150 + [4.40] * 149 + [925.0]
    assert diagnosis.robust_spread(reps) < 0.01
    d = diagnosis.diagnose(3.1e6, reps, 4.27, fixed_us=3.0)
    assert d.stddev_spread > 1.0 and d.verdict == "bandwidth-bound"


def test_the_recorded_contention_is_called_from_its_robust_spread():
    d = kda.recorded()
    alone, cont = d.contention.alone, d.contention.contended
    # alone: not noisy (cold single steps read in 32 ns event ticks, so a few percent, not a fraction);
    # beside the background: past the contention threshold, and the median moved with it
    assert diagnosis.robust_spread(alone.reps_us) < diagnosis.NOISY < diagnosis.robust_spread(cont.reps_us)
    assert cont.median > 1.2 * alone.median
    assert max(cont.reps_us) < 10 * cont.median            # short background launches: no rep queued behind one


def test_geometry_is_evidence_far_and_tight_on_a_full_grid_is_not_starvation():
    reps = 87.0 + 0.01 * np.arange(10)
    starved = diagnosis.diagnose(3.1e6, reps, 3.44, geometry=diagnosis.Geometry(12, 132))
    assert starved.verdict == "starvation" and any("12 SMs with work (9%)" in r for r in starved.reasons)
    full = diagnosis.diagnose(3.1e6, reps, 3.44, geometry=diagnosis.Geometry(264, 132, 2))
    assert full.verdict == "unclear" and any("look inside the block" in r for r in full.reasons)
    bare = diagnosis.diagnose(3.1e6, reps, 3.44)
    assert bare.verdict == "starvation" and any("inferred, not checked" in r for r in bare.reasons)


def test_kda_geometry_comes_from_the_plan_and_the_calculator():
    g = kda_decode.geometry(12, kda_decode.V, "store", "tuned")
    regs, smem = loader.resources("kda_decode", kda_decode.plan(12, kda_decode.V, kda_decode.V, "store", "tuned").expr)
    from launchlab.core import occupancy
    assert g.blocks == 12 and g.sms_with_work == 12
    assert g.blocks_per_sm == occupancy.occupancy(1024, regs, smem).blocks_per_sm
    assert kda_decode.geometry(12, kda_decode.BV_TILED, "rn").blocks == 48
    w = kda_decode.geometry(12, kda_decode.V, "store", "walk")
    wregs, wsmem = loader.resources("kda_decode", "kda_walk<0>")
    assert w.blocks == 12 and w.blocks_per_sm == occupancy.occupancy(128, wregs, wsmem).blocks_per_sm


def test_the_lectures_end_to_end_numbers_imply_a_kernel_speedup():
    e = kda.LECTURE_PR77
    assert e.kda_ms_before == pytest.approx(6.249, abs=1e-3)
    assert e.kda_ms_after == pytest.approx(6.249 - 3.33, abs=1e-3)
    assert e.kernel_speedup == pytest.approx(2.14, abs=0.01)
    assert e.tok_s_after / e.tok_s_before - 1 == pytest.approx(0.067, abs=0.001)
    assert e.token_gain_from(e.kernel_speedup) == pytest.approx(e.ms_before / e.ms_after - 1, rel=1e-9)
    assert 70 < e.launches_per_token < 73


def _peer_in_a_child(tmp_path, extra_path=None):
    """fla_peer() in a fresh interpreter: what it raised, and whether torch got imported on the way."""
    import json
    import os
    import subprocess
    import sys
    code = ("import json, sys\n"
            "from launchlab.sections.s03_starvation import kda\n"
            "try:\n    kda.fla_peer(12)\n    raised = None\n"
            "except Exception as e:\n    raised = [type(e).__name__, str(e)]\n"
            "print(json.dumps({'raised': raised, 'torch': 'torch' in sys.modules}))\n")
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join([str(extra_path), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_fla_peer_without_fla_core_says_so_before_importing_torch(tmp_path):
    """Without fla-core the peer cannot run: it says which package is missing, and importing torch for it (seconds
    in a fresh process, on the live course's clock) is not paid."""
    import importlib.util
    if importlib.util.find_spec("fla") is not None:
        pytest.skip("fla-core is installed here")
    r = _peer_in_a_child(tmp_path)
    assert r["raised"][0] == "PeerMissing" and "fla-core is not installed" in r["raised"][1]
    assert r["torch"] is False


def test_fla_peer_with_a_package_named_fla_goes_on_to_run_it(tmp_path):
    """The complement: where a package named fla is found the peer is attempted (here it fails further on, at
    torch or FLA's own import, or in live mode), not refused as missing."""
    (tmp_path / "fla").mkdir()
    (tmp_path / "fla" / "__init__.py").write_text("")
    r = _peer_in_a_child(tmp_path, extra_path=tmp_path)
    assert r["raised"] is not None and r["raised"][0] != "PeerMissing"


def test_main_s_contention_is_recorded_apart_and_an_older_recording_has_none():
    """Issue 41: contention on main's own, graph-timed kernel (kda.contention_main) is a field of its own; the
    recording made before it decodes with None, and one that holds it round-trips and gives the summary its two
    spreads and its shift (worked out by hand below)."""
    import dataclasses
    import json

    from launchlab.core import recordings
    from launchlab.core.timing import Timing
    from launchlab.sections.s03_starvation import kda
    rec = kda.recorded()                       # the H200's, 2026-12-05: main's contention recorded
    assert rec.contention_main is not None and rec.contention_main.background.launches > 0
    assert {"kda_main_alone_spread_pct", "kda_main_contended_spread_pct", "kda_main_contended_shift_pct"} <= set(
        kda.headline(rec))
    older = recordings.encode(rec)
    older = dict(json.loads(older) if isinstance(older, str) else older)
    older.pop("contention_main")               # a recording made before issue 41's field
    old = kda._parse(older, "test")
    assert old.contention_main is None and "kda_main_contended_spread_pct" not in kda.headline(old)
    alone = Timing([26.0, 26.1, 26.2, 26.3, 26.4] * 6, "graph-cold", 240)
    busy = Timing([30.0, 31.0, 32.0, 33.0, 34.0] * 6, "graph-cold", 240)
    cm = kda.Contention(alone, busy, kda.Background("stream_read", 12000, 24.3, True))
    new = dataclasses.replace(old, contention_main=cm)
    back = kda._parse(recordings.encode(new), "test")
    assert back.contention_main.contended.reps_us == busy.reps_us and back.contention_main.background.launches == 12000
    h = kda.headline(back)
    # alone: IQR 26.1..26.3 -> 0.2 / 1.349 / 26.2 = 0.566 %; busy: IQR 31..33 -> 2 / 1.349 / 32 = 4.633 %
    assert round(h["kda_main_alone_spread_pct"], 2) == 0.57 and round(h["kda_main_contended_spread_pct"], 2) == 4.63
    assert round(h["kda_main_contended_shift_pct"], 2) == round(100 * (32 / 26.2 - 1), 2) == 22.14


def test_the_result_comes_first_in_four_lines_from_the_recording():
    """Issue 41: 03a leads with §3's result. On the H200 recording (2026-12-05): main 12 blocks at 26.01 µs cold,
    the fix 48 blocks at 8.13 µs (26.01 / 8.13 = 3.2x), the bytes identical, and the lecture's 52.96 -> 49.63
    ms/token (18.88 -> 20.15 tok/s: +6.7 %). The times are the medians of the recording's raw cold reps."""
    import dataclasses
    import json
    import statistics

    from launchlab.sections.s03_starvation import kda
    d = kda.recorded()
    raw = json.loads((Path(__file__).parent.parent / "data" / "recordings" / "section03.json").read_text())["data"]
    main_us = statistics.median(d.main.cold.reps_us)
    fix_us = statistics.median(d.fixed.cold.reps_us)
    assert raw and f"{main_us:.2f}" == "26.01" and f"{fix_us:.2f}" == "8.13" and f"{main_us / fix_us:.1f}" == "3.2"
    lines = kda.result(d).splitlines()
    assert len(lines) == 4 and all(len(x) <= 110 for x in lines)
    assert lines[0].startswith("main : 12 blocks of 128 (grid = n_head)") and "26.01 µs per step, cold" in lines[0]
    assert lines[1].startswith("fix  : 48 blocks of 128 (value tiles, BV = 32)") and " 8.13 µs, 3.2x" in lines[1]
    assert lines[0].index("26.01") + 5 == lines[1].index("8.13") + 4                 # one column: the times end alike
    assert "byte-identical to main's, at 12 and 96 heads" in lines[2]
    assert lines[3] == ("the lecture, end to end: 52.96 -> 49.63 ms/token, +6.7 % tok/s "
                        "(the course's own step: notebook 06)")
    v = d.compare_96.variants[kda.variant_name(d.fixed.body, d.fixed.bv, d.fixed.mode)]
    broken = dataclasses.replace(d, compare_96=dataclasses.replace(
        d.compare_96, variants={**d.compare_96.variants, kda.variant_name(d.fixed.body, d.fixed.bv, d.fixed.mode):
                                dataclasses.replace(v, identical_to_baseline=False)}))
    assert "NOT identical to main's" in kda.result(broken).splitlines()[2]          # one head count differing is enough
