"""§6 on the recorded decode step (any machine): the profile accounts for the graph-timed step, both instruments
ran both arms interleaved, every ABBA has its reps, the arms differ only in the planted launches, one build."""
import statistics

import pytest

from launchlab.core import gates
from launchlab.kernels import decode
from launchlab.sections.s06_one_binary import onebinary, stepprofile


@pytest.fixture(scope="module")
def data():
    return onebinary.recorded()


def test_full_depth_at_the_scored_context(data):
    assert data.layers == decode.FULL_LAYERS and data.ctx == 131_072 and data.short_ctx == onebinary.SHORT_CTX
    assert set(data.profiles) == {f"{p} {c}" for p in ("main", "fixed") for c in (data.ctx, data.short_ctx)}


def test_every_profile_counts_327_norms_and_agrees_with_the_graph_within_10_percent(data):
    for key, p in data.profiles.items():
        assert p.norms() == 327 and p.launches == 1729, key
        assert abs(p.agreement) <= 0.10, (key, p.sum_us, p.step_us)
        assert p.reps >= 10 and len(p.graph_us) == p.reps and 0 < p.event_cost_us < 10
        assert min(p.eager_us) > 2 * p.step_us, key            # eager events count the host's gaps
        assert abs(sum(r.share(p.sum_us) for r in p.rows) - 1) < 1e-9


def test_profile_rows_carry_geometry_and_occupancy(data):
    rows = {r.role: r for r in data.profile("main").rows}
    kda_step, norm = rows["kda.step"], rows["input_norm"]
    assert kda_step.grid == [1, 12] and kda_step.sms_with_work == 12 and kda_step.calls == 46
    assert norm.block == 128 and norm.sms_with_work == 1 and norm.calls == 93 and norm.occupancy_pct == 100
    assert rows["mla.split"].grid[0] < 132 < {r.role: r for r in data.profile("fixed").rows}["mla.split"].grid[0]
    assert rows["mlp.gate_up"].registers is None and rows["mlp.gate_up"].limiter == "cuBLAS"


def test_abba_runs_are_interleaved_with_three_pairs_and_each_gate_is_there(data):
    assert [g.gate for g in data.gates] == list(onebinary.DECODE_GATES)
    for g in [data.eval] + data.gates:
        assert g.abba.order == ["A", "B", "B", "A", "A", "B"] and len(g.ms("A")) == len(g.ms("B")) == 3
        assert g.main == data.gate_arms.get(g.gate, ["main"])[0] or g.gate == "preset"
    assert data.eval.cost_ms > 10 * data.eval.spread_ms                         # a verdict, not noise
    assert data.gate("KDA_ELIDE").cost_ms < 3 * data.gate("KDA_ELIDE").spread_ms + 0.01


def test_the_two_instruments_disagree_for_the_reason_the_notebook_gives(data):
    b = data.bench
    assert b.order == ["A", "B", "B", "A", "A", "B"] and (b.long, b.short) == (onebinary.BENCH_LONG, onebinary.BENCH_SHORT)
    assert data.eval_gain_pct > data.bench_gain_pct > 0
    split = {c: {r.role: r for r in data.profile("fixed", c).rows}["mla.split"] for c in (data.ctx, data.short_ctx)}
    assert split[data.short_ctx].grid[0] == 1 < split[data.ctx].grid[0]        # no split below SPLIT_MIN_CTX
    main_s, fixed_s = (sum(r.us_per_token for r in data.profile(p, data.short_ctx).rows if r.role == "mla.split")
                       for p in ("main", "fixed"))
    assert abs(main_s - fixed_s) / fixed_s < 0.02                               # the floor gate is inert there


def test_the_arms_differ_only_in_planted_launches_and_no_module_was_built_between_them(data):
    assert {row[0] for row in data.arm_diff} == {"input_norm", "post_norm", "final.norm", "mla.q_a_norm",
                                                  "mla.kv_a_norm", "kda.o_norm", "kda.step", "mla.split"}
    assert data.modules.after_fixed_arm == data.modules.after_all_arms > 0
    assert data.gate_arms == {g: [gates.preset("main")[g], gates.preset("fixed")[g]] for g in onebinary.DECODE_GATES}


def test_ncu_cross_checks_the_top_offenders(data):
    assert data.ncu_error is None and data.ncu
    for c in data.ncu:
        assert abs(c.ncu_theoretical_pct - c.calculator_pct) < 0.5, c
        assert c.achieved_pct <= c.ncu_theoretical_pct + 1, c
    walk = next(c for c in data.ncu if c.preset == "main" and "kda_walk" in c.kernel)
    assert walk.grid == 12 and walk.achieved_pct < 10


def test_planted_share_and_decomposition_add_up(data):
    parts = onebinary.decomposition(data)
    assert sum(a for _, a, _ in parts) == pytest.approx(data.profile("main").sum_us / 1e3)
    assert data.planted_share("main") > data.planted_share("fixed")


def test_the_profile_table_names_its_check(data):
    text = stepprofile.table(data.profile("main"), top=5)
    assert "327 RMS norms" in text and "graph-timed without marks" in text and "more rows" in text


def test_gain_is_a_rate_not_a_time_saved():
    assert onebinary.gain_pct(52.96, 49.63) == pytest.approx(6.71, abs=0.01)
    assert onebinary.gain_pct(*[1e3 / x for x in onebinary.LECTURE_EVAL]) == pytest.approx(6.7, abs=0.05)


def test_bench_marginal_arithmetic():
    b = onebinary.Bench(2048, 136, 8, ["A", "B"], [1360.0, 1500.0], [80.0, 100.0])
    assert b.marginal_ms == [10.0, pytest.approx(1400 / 128)] and b.median("A") == 10.0
    assert onebinary.Bench.from_dict(b.to_dict()) == b
    assert statistics.median(b.arm("B")) == pytest.approx(10.9375)


@pytest.mark.parametrize("tool", ["memcheck", "sweep_decode_memcheck", "sweep_decode_synccheck"])
def test_the_recorded_sanitizer_runs_over_a_decode_token_are_clean(tool):
    from pathlib import Path
    name = tool if tool.startswith("sweep_") else f"decode_{tool}"
    log = (Path(__file__).resolve().parent.parent / "data" / "sanitizer" / f"{name}.txt").read_text()
    tool = tool.rsplit("_", 1)[-1]
    assert log.startswith(f"# compute-sanitizer --tool {tool}") and "H200" in log.splitlines()[0]
    assert "ERROR SUMMARY: 0 errors" in log
    assert sum(f"{p}: " in log and "RMS norms" in log for p in ("main", "fixed")) == 2
