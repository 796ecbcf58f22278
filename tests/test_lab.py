"""The lab's recording and its reference audit (any machine): the table, the lecture's occupancy column, the
ranking by recoverable time, the top offender's diagnosis, the fixes' ABBA and cmp, the sweep."""
import pytest

from launchlab.kernels import decode
from launchlab.sections.s06_one_binary import onebinary
from launchlab.faces import grading
from launchlab.sections.s09_lab import lab as tools

lab = grading.reference()       # the reference answers live with the instructor (lab_solutions/lab_reference.py)


@pytest.fixture(scope="module")
def data():
    return tools.recorded()


@pytest.fixture(scope="module")
def rows(data):
    return lab.with_fill(lab.table(data.step), data.step)


def test_the_table_accounts_for_every_launch_of_the_step(data, rows):
    assert sum(r["calls"] for r in rows) == 1729 and data.layers == decode.FULL_LAYERS
    assert sum(r["ms_per_token"] for r in rows) == pytest.approx(data.step.sum_us / 1e3)
    assert all(r["grid"] is None for r in rows if r["kernel"].startswith("cublas:"))
    assert abs(data.step.agreement) <= 0.10


def test_occupancy_is_blocks_over_sms_and_flags_the_planted_and_the_fine(rows):
    by = {tools.key(r): r for r in rows}
    assert lab.occupancy(by["rms_norm:rms_norm_f32 [1] 128"]) == pytest.approx(1 / 132)
    flagged = {tools.key(r) for r in lab.flagged(rows)}
    assert {"rms_norm:rms_norm_f32 [1] 128", "kda_decode:kda_walk<0> [1, 12] 128", "decode_ops:kda_prep [12] 128"} <= flagged
    assert not any(k.startswith("mla_decode:mla_split") for k in flagged)         # 129 blocks: 98 % of the SMs


def test_the_ranking_by_wave_fill_puts_the_norm_the_mla_split_and_the_kda_step_on_top(rows):
    """Blocks / (SMs x resident blocks per SM): the MLA split's 129 two-per-SM blocks fill half a wave, so it
    ranks second (1.66 ms idle behind the norm's 1.83 ms); by blocks / SMs (98 %) it would sink far below."""
    rk = [tools.key(r) for r in lab.ranking(rows)]
    assert rk[:3] == ["rms_norm:rms_norm_f32 [1] 128", "mla_decode:mla_split [129, 1, 1] 128",
                      "kda_decode:kda_walk<0> [1, 12] 128"]
    mla = next(r for r in rows if r["kernel"] == "mla_decode:mla_split")
    assert mla["occupancy"] == pytest.approx(129 / 132) and mla["wave_fill"] == pytest.approx(129 / 264)
    by_occupancy = sorted((r for r in rows if r["occupancy"] is not None),
                          key=lambda r: -r["ms_per_token"] * (1 - r["occupancy"]))
    assert [tools.key(r) for r in by_occupancy].index(rk[1]) >= 5
    fine = next(r for r in rows if r["kernel"] == tools.FINE_KERNEL)
    assert lab.recoverable_ms(fine) < 0.1 * lab.recoverable_ms(lab.ranking(rows)[1])
    by_time = [tools.key(r) for r in rows if lab.occupancy(r) is not None]
    assert by_time != rk                                      # recoverable time reorders the profiler's list


def test_the_norm_and_the_kda_step_are_starved_not_contended(data, rows):
    for r in (lab.ranking(rows)[0], lab.ranking(rows)[2]):
        d = lab.diagnose(data, r)
        assert d.verdict == "starvation" and d.n >= 10 and d.ratio > 5 and d.spread < 0.02, (tools.key(r), d)


def test_each_fix_is_faster_than_main_beyond_its_spread(data):
    for g in tools.FIXES:
        f = data.fix(g)
        assert f.abba.order == ["A", "B", "B", "A", "A", "B"] and lab.abba_verdict(f) == "faster", g


def test_the_fixes_claimed_identical_are_identical_at_both_depths(data):
    assert {(c.fix, c.ctx) for c in data.cmp} == {(g, c) for g in tools.CMP_FIXES for c in (tools.SHORT_CTX, tools.CTX)}
    assert all(c.identical and c.sha_a == c.sha_b for c in data.cmp)


def test_the_sweep_covers_each_knob_and_the_fixed_choices_are_near_its_best(data):
    for knob, values in tools.SWEEPS.items():
        pts = data.swept(knob)
        assert [p.value for p in pts] == list(values) and all(p.ms_per_token for p in pts), knob
    best = lambda k: min(p.ms_per_token for p in data.swept(k))
    at = lambda k, v: next(p.ms_per_token for p in data.swept(k) if p.value == v)
    assert at("kda_bv", 128) > at("kda_bv", 32) and at("mla_splits", 128) > at("mla_splits", 256)
    assert at("mla_splits", 256) < 1.02 * best("mla_splits") and at("rms_block", 1024) < 1.02 * best("rms_block")


def test_the_axes_table_and_the_verdict_rule():
    assert not lab.AXES["rms_norm"]["no_cross_block_reduction"] and not lab.AXES["mla_split"]["no_cross_block_reduction"]
    assert all(v for k, v in lab.AXES["kda_step"].items() if k.startswith("no_") or k == "layout_unchanged")
    from launchlab.core import timing
    t = lambda *xs: timing.Timing([x * 1e3 for x in xs], "graph", 8)
    close = onebinary.GateRun("X", "1", "0", timing.ABBA(["A", "B", "B", "A"], [t(10.0), t(10.1), t(10.05), t(10.2)]))
    assert lab.abba_verdict(close) == "no measurable difference"


def test_step_8_finds_the_head_derived_grids_including_the_fine_one():
    hits = {site for site, hit in tools.sharded_sites("head") if hit}
    assert any("decode.py" in s for s in hits) and any("kda_decode.py" in s for s in hits)


def test_every_sweep_role_is_a_site_the_decode_step_launches():
    """The lab's sweeps find their kernel in the step's launch log by role (a site without its layer). The layout
    move renamed one to "kda_decode.step", a role no launch has: the live lab then stopped at its first KDA
    point, and only a live run of notebook 09 could show it. Every role is checked against the step's sites."""
    import re

    from launchlab.kernels import decode
    from launchlab.sections.s09_lab import lab
    src = open(decode.__file__).read()
    sites = set(re.findall(r'f"L\{i\}\.([a-z_.]+)"', src)) | set(re.findall(r'"([a-z_]+)"', src))
    for knob, role in lab.SWEEP_ROLE.items():
        assert role in sites, (knob, role)
    assert lab.SWEEP_ROLE["kda_bv"] == "kda.step"


def test_the_abba_verdict_on_every_branch_and_both_sides_of_its_edge():
    """A = main + the fix, B = main, per-rep ms (binary fractions, so the edge is exact): A's reps 10.0 and 10.5
    (median 10.25, range 0.5). 'faster' when main's median exceeds the fix's by more than the wider range,
    'slower' when it is below by more, and no verdict within it, the edge itself included."""
    from launchlab.core import timing
    t = lambda ms: timing.Timing([ms * 1e3], "graph", 8)

    def run(b):
        return onebinary.GateRun("X", "1", "0", timing.ABBA(["A", "B", "B", "A"], [t(10.0), t(b), t(b), t(10.5)]))
    assert lab.abba_verdict(run(11.0)) == "faster"                       # gap +0.75 > 0.5
    assert lab.abba_verdict(run(10.75)) == "no measurable difference"    # gap +0.5: at the edge
    assert lab.abba_verdict(run(9.75)) == "no measurable difference"     # gap -0.5: at the edge
    assert lab.abba_verdict(run(9.5)) == "slower"                        # gap -0.75


def test_step_6s_gain_spread_and_verdict_on_every_branch_and_both_sides_of_its_edge():
    """lab_reference.gain_and_spread and verdict (the learner's own ABBA, steps 6-7): binary fractions, so each
    edge is exact. main's reps 10.0, 10.5, 11.0 (median 10.5), the fix's 9.75, 10.0, 10.25 (median 10.0)."""
    gain, spread = lab.gain_and_spread([10.0, 11.0, 10.5], [10.25, 9.75, 10.0])
    assert (gain, spread) == (0.5, 1.0)                                  # main's range 1.0, the fix's 0.5
    assert lab.gain_and_spread([1.0, 1.0, 1.0], [2.0, 2.5, 3.0]) == (-1.5, 1.0)   # the fix's range is the wider
    assert lab.verdict(0.75, 0.5) == "faster" and lab.verdict(0.5, 0.5) == "no measurable difference"
    assert lab.verdict(-0.5, 0.5) == "no measurable difference" and lab.verdict(-0.75, 0.5) == "slower"
    assert lab.verdict(0.0, 0.0) == "no measurable difference" and lab.verdict(0.25, 0.0) == "faster"
    assert lab.verdict(-0.25, 0.0) == "slower"


def test_the_wave_fill_order_lifts_the_split_and_its_reason_is_resident_blocks():
    """Step 3: the lecture's ranking by blocks / SMs, then the wave-fill ranking; moved_up is the key that climbs
    most (rows made up here, worked out by hand)."""
    rows = [{"kernel": "a", "grid": [1], "block": 128, "ms_per_token": 2.0, "occupancy": 1 / 132, "wave_fill": 0.001},
            {"kernel": "b", "grid": [129], "block": 128, "ms_per_token": 3.0, "occupancy": 129 / 132, "wave_fill": 0.49},
            {"kernel": "c", "grid": [28], "block": 256, "ms_per_token": 0.4, "occupancy": 28 / 132, "wave_fill": 0.03},
            {"kernel": "d", "grid": None, "block": None, "ms_per_token": 9.0, "occupancy": None, "wave_fill": None}]
    occ = lab.ranking_by_occupancy(rows)
    assert [r["kernel"] for r in occ] == ["a", "c", "b"]         # 1.98, 0.315, 0.068: cuBLAS left out
    wave = lab.ranking(rows)
    assert [r["kernel"] for r in wave] == ["a", "b", "c"]        # 1.998, 1.53, 0.388
    assert lab.moved_up(occ, wave) == lab.key(rows[1])
    tie = [dict(rows[0], kernel="x"), dict(rows[0], kernel="y")]
    assert lab.moved_up(tie, tie) == lab.key(tie[0])            # nothing moves: the first
