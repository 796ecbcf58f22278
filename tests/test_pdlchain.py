"""The launch path and accuracy recordings (any machine): what they hold, checked against the issue's claims
and against each other -- every number read from the H200 recordings, none typed in."""
import pytest

from launchlab.sections.s02_width import accuracy
from launchlab.sections.s06_one_binary import onebinary, pdlchain


@pytest.fixture(scope="module")
def d():
    return pdlchain.recorded()


@pytest.fixture(scope="module")
def acc():
    return accuracy.recorded()


def test_the_327_norm_graph_is_at_least_5_percent_faster_on_the_path(d):
    wide = d.chain("wide")
    assert wide.launches == 327 and wide.expr == "rms_norm_wide<true>" and wide.block == 1024
    assert wide.gain_pct >= 5.0
    assert max(wide.arm_reps("A")) < min(wide.arm_reps("B"))           # every PDL rep beats every plain rep
    assert 0 < d.chain("original").gain_pct < wide.gain_pct
    assert wide.saved_pct == pytest.approx(100 * (1 - 1 / (1 + wide.gain_pct / 100)))


def test_the_timelines_show_the_gap_the_path_hides_and_the_one_the_opt_out_pays(d):
    plain, on, out = d.timelines
    assert on.opted_out is None and out.opted_out == pdlchain.OPT_OUT_AT
    assert all(g > 0 for g in plain.gaps_ns)                            # serialized: idle between launches
    assert all(g < 0 for g in on.gaps_ns)                               # the next block already resident
    assert out.gaps_ns[out.opted_out - 1] > 0 > out.typical_gap_ns()    # only the opted-out launch waits in line
    assert out.gaps_ns[out.opted_out - 1] == pytest.approx(plain.typical_gap_ns(), rel=0.5)
    assert all(w >= 0 for w in on.waits_ns) and on.per_launch_ns < plain.per_launch_ns


def test_the_step_gains_and_the_opt_out_costs_more_than_its_spread(d):
    step, opt, win = d.run("step"), d.run("opt_out"), d.run("norm_win")
    for r in (step, opt, win):
        assert r.cost_ms > 5 * r.spread_ms and len(r.abba.order) == 6
    assert 0 < d.opt_out_cost_us < d.norm_win_us                          # it taxes the win, does not erase it
    assert d.step_gain_pct == pytest.approx(onebinary.gain_pct(step.main_ms, step.fixed_ms))
    assert all(c.identical and c.sha_a == c.sha_b for c in d.cmp) and {c.ctx for c in d.cmp} == {2048, 131_072}


def test_kl_against_main_is_zero_exactly_where_the_bytes_agree(acc):
    assert acc.depths == [2048, 131_072] and acc.tokens == 32 and acc.layers == 93
    for a in acc.arms:
        assert len(a.kl) == len(a.top1) == len(a.identical) == acc.tokens
        assert all((k == 0.0) == ident for k, ident in zip(a.kl, a.identical)), a.arm
    for ctx in acc.depths:
        for name in ("main again", "widened apply", "PDL off"):             # the control, the split, the path
            assert acc.arm(name, ctx).bytes_identical and acc.arm(name, ctx).mean_kl == 0.0
        reduce = acc.arm("widened reduction", ctx)
        assert not any(reduce.identical) and reduce.mean_kl > 0
    assert acc.arm("MLA split, derived floor", 2048).bytes_identical       # no split below SPLIT_MIN_CTX
    assert not any(acc.arm("MLA split, derived floor", 131_072).identical)


def test_the_frontier_table_reads_the_same_runs(acc):
    rows = {r[0]: r for r in accuracy.frontier_rows(acc, 131_072)}
    assert set(rows) == {n for n, _ in accuracy.ARMS} - {"main again"}
    arm, tok_s, main_tok_s, over, scores, top1, kl_ = rows["widened apply"]
    assert tok_s > main_tok_s and scores == (over > 2.0) and top1 == 1.0 and kl_ == 0.0
    text = accuracy.frontier_table(acc, 131_072)
    assert "lecture #71, round 3" in text and "course: widened reduction" in text


def test_the_summary_has_the_issues_keys(d, acc, summary_figures):
    f = summary_figures
    assert f["02"]["rms_pdl_gain_pct"] == pytest.approx(d.chain("wide").gain_pct, rel=1e-3)
    assert f["02"]["kl_wide_apply_vs_main"] == 0.0 and f["02"]["kl_wide_reduce_vs_main"] > 0
    assert f["06"]["pdl_step_gain_pct"] > 0 and f["06"]["pdl_opt_out_cost_us_per_token"] > 0


def test_the_ratchet_line_sets_the_measured_kl_beside_the_lectures(acc):
    text = accuracy.ratchet(acc)
    k = acc.arm("widened reduction", 2048).mean_kl
    assert "4.63x" in text and f"{k:.2e}" in text and f"{k / 0.0026:.0%}" in text
