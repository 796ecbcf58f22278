"""Every branch of the diagnosis, on both sides of every threshold, with expectations worked out by hand.

Reps are built so their median and robust spread are known exactly: 11 reps m * (1 + a x) for x evenly from -1
to 1 have median m, inclusive quartiles m(1 -/+ a/2), so the robust spread (IQR / 1.349 / median) is a / 1.349.
The floor is 1 µs: 1 MB at 1 TB/s."""
import numpy as np
import pytest

from launchlab.core import diagnosis as dg

MB = 1e6


def reps(median_us: float, spread: float) -> list[float]:
    a = spread * 1.349
    return [median_us * (1 + a * x) for x in np.linspace(-1, 1, 11)]


def verdict(ratio, spread, **kw):
    return dg.diagnose(MB, reps(ratio, spread), 1.0, **kw)


def test_the_reps_have_the_spread_they_were_built_with():
    assert dg.robust_spread(reps(7.0, 0.031)) == pytest.approx(0.031)
    assert dg.diagnose(MB, reps(7.0, 0.01), 1.0).floor_us == pytest.approx(1.0)


@pytest.mark.parametrize("ratio, want", [(2.4, "unclear"), (2.6, "starvation"), (10.0, "starvation")])
def test_starvation_starts_at_two_and_a_half_times_the_floor(ratio, want):
    assert verdict(ratio, 0.01).verdict == want


@pytest.mark.parametrize("spread, want", [(0.019, "starvation"), (0.021, "unclear"), (0.049, "unclear"),
                                          (0.051, "contention")])
def test_tight_is_two_percent_and_noisy_is_five(spread, want):
    """Far from the floor: tight (<= 2 %) is starvation, noisy (> 5 %) contention, between them unclear."""
    assert verdict(20.0, spread).verdict == want


@pytest.mark.parametrize("ratio, want", [(1.69, "bandwidth-bound"), (1.71, "unclear")])
def test_near_the_floor_is_within_one_point_seven(ratio, want):
    assert verdict(ratio, 0.01).verdict == want


@pytest.mark.parametrize("blocks, want", [(64, "starvation"), (65, "starvation"), (66, "unclear"),
                                          (67, "unclear"), (12, "starvation")])
def test_a_far_tight_launch_on_half_the_sms_or_more_is_not_starved(blocks, want):
    """132 SMs: 65 blocks is 49 % of them (starved), 66 is exactly half and 67 is 51 % (not a grid problem)."""
    d = verdict(20.0, 0.01, geometry=dg.Geometry(blocks))
    assert d.verdict == want
    if want == "unclear":
        assert any("look inside the block" in r for r in d.reasons)


def test_arithmetic_bound_when_the_arithmetic_takes_half_the_time_or_more():
    """20 µs median; 9.8 MFLOP at 1 TFLOP/s take 9.8 µs, 49 % of it (not), 10.2 MFLOP 51 % (arithmetic)."""
    assert verdict(20.0, 0.01, flops=9.8e6, flop_rate_tflops=1.0).verdict == "starvation"
    assert verdict(20.0, 0.01, flops=10.2e6, flop_rate_tflops=1.0).verdict == "arithmetic-bound"
    assert verdict(20.0, 0.10, flops=10.2e6, flop_rate_tflops=1.0).verdict == "arithmetic-bound"   # before noise


def test_contention_is_decided_before_the_floor():
    """A noisy launch right at its floor is contention, not bandwidth-bound: the spread is read first."""
    assert verdict(1.0, 0.08).verdict == "contention"


def test_a_fixed_launch_cost_joins_the_floor():
    """2.6 µs against a 1 µs bytes floor is starved; with a 0.8 µs launch cost the floor is 1.8 and 2.6 / 1.8 =
    1.44 is at the floor."""
    assert verdict(2.6, 0.01).verdict == "starvation"
    d = verdict(2.6, 0.01, fixed_us=0.8)
    assert d.verdict == "bandwidth-bound" and d.ratio == pytest.approx(2.6 / 1.8)


def test_the_verdict_states_its_evidence():
    d = verdict(34.8, 0.0008, geometry=dg.Geometry(12))
    text = str(d)
    assert text.startswith("STARVATION") and "34.8x" in text and "robust spread 0.1%" in text
    assert "12 blocks on 132 SMs: 12 SMs with work (9%)" in text


def test_too_few_reps_or_no_bytes_are_refused():
    with pytest.raises(ValueError, match="at least 10 reps"):
        dg.diagnose(MB, [1.0] * 9, 1.0)
    with pytest.raises(ValueError, match="positive"):
        dg.diagnose(0, [1.0] * 10, 1.0)


# ------------------------------------------------------------------ exact edges and the evidence, word for word
def flat(value_us: float) -> list[float]:
    """Ten reps of one value: median exact, robust spread 0."""
    return [value_us] * 10


def test_the_floor_is_bytes_over_bandwidth_exactly():
    """1 MB at 1 TB/s is exactly 1 µs in float64 (1e6 / 1e12 * 1e6 == 1.0), so a unit slip shows."""
    d = dg.diagnose(MB, flat(3.0), 1.0)
    assert d.floor_us == 1.0 and d.ratio == 3.0 and d.median_us == 3.0 and d.n == 10
    assert d.stddev_spread == 0.0 and d.spread == 0.0 and d.geometry is None
    assert dg.diagnose(MB, flat(3.0), 2.0).floor_us == 0.5
    assert dg.diagnose(MB, flat(3.0), 1.0, fixed_us=0.25).floor_us == 1.25


def test_each_edge_belongs_where_the_rule_says():
    assert dg.diagnose(MB, flat(2.5), 1.0).verdict == "starvation"                      # "2.5x or more"
    assert dg.diagnose(MB, flat(1.7), 1.0).verdict == "bandwidth-bound"                 # "within 1.7x"
    # 1 MFLOP at 1 TFLOP/s is 1 µs, exactly half of 2 µs: "half the time or more"
    assert dg.diagnose(MB, flat(2.0), 1.0, flops=1e6, flop_rate_tflops=1.0).verdict == "arithmetic-bound"
    assert dg.diagnose(MB, flat(2.0), 1.0, flops=1e6).verdict == "unclear"              # no rate: no arithmetic
    assert dg.diagnose(1, flat(2.0), 1.0).floor_us == 1e-6                              # one byte is an input
    with pytest.raises(ValueError, match="^bytes moved and bandwidth must be positive$"):
        dg.diagnose(MB, flat(2.0), 0.0)
    with pytest.raises(ValueError, match="^bytes moved and bandwidth must be positive$"):
        dg.diagnose(MB, flat(2.0), -1.0)
    # 1 µs of arithmetic against half of 2.000001 µs: just under half the time, so not arithmetic-bound
    assert dg.diagnose(MB, flat(2.000001), 1.0, flops=1e6, flop_rate_tflops=1.0).verdict == "unclear"


def test_starvation_states_its_evidence_word_for_word():
    d = dg.diagnose(MB, flat(30.0), 1.0)
    assert d.reasons == ["floor = 1.000 MB / 1.00 TB/s = 1.000 µs",
                         "30x off the floor yet repeatable to 0.0%: a structural property of the launch, not of "
                         "the machine's state",
                         "not contention (that would be noisy); not arithmetic (none given to account for it)",
                         "geometry not given: 'the blocks are not there' is inferred, not checked"]
    d = dg.diagnose(MB, flat(30.0), 1.0, flops=1e6, flop_rate_tflops=1.0, fixed_us=0.5,
                    geometry=dg.Geometry(12, blocks_per_sm=2))
    assert d.verdict == "starvation" and d.reasons == [
        "floor = 1.000 MB / 1.00 TB/s + 0.50 µs per launch = 1.500 µs",
        "geometry: 12 blocks on 132 SMs: 12 SMs with work (9%); 2 resident per SM -> 4.5% of one wave's 264 slots",
        "20x off the floor yet repeatable to 0.0%: a structural property of the launch, not of the machine's state",
        "not contention (that would be noisy); not arithmetic (it accounts for little of the time)"]
    assert str(d).splitlines()[0] == ("STARVATION: median 30.000 µs vs floor 1.500 µs (20.0x), robust spread 0.0% "
                                      "(stddev 0.0%) over 10 reps")


def test_every_other_verdict_states_its_evidence_word_for_word():
    floor = "floor = 1.000 MB / 1.00 TB/s = 1.000 µs"
    assert dg.diagnose(MB, flat(1.5), 1.0).reasons == [
        floor, "within 1.7x of the floor: the bytes (and the launch) explain the time"]
    assert dg.diagnose(MB, flat(4.0), 1.0, flops=3e6, flop_rate_tflops=1.0).reasons == [
        floor, "the arithmetic alone takes 3.000 µs, 75% of the time"]
    noisy = dg.diagnose(MB, reps(20.0, 0.08), 1.0)
    assert noisy.reasons == [floor, "robust spread 8.0% > 5%: slow inconsistently -- other work is interfering"]
    mid = dg.diagnose(MB, reps(20.0, 0.03), 1.0)
    assert mid.reasons == [floor, "ratio 20.0x with robust spread 3.0%: neither tight-and-far nor noisy; measure "
                                  "more reps or profile"]
    full = dg.diagnose(MB, flat(20.0), 1.0, geometry=dg.Geometry(132))
    assert full.verdict == "unclear" and full.reasons == [
        floor, "geometry: 132 blocks on 132 SMs: 132 SMs with work (100%)",
        "20x off the floor and tight, but 100% of the SMs have work: not a grid too small -- look inside the block "
        "(loads in flight per thread, a dependent chain)"]


def test_the_diagnosis_keeps_what_it_was_given():
    r = [10.0, 10.0, 10.0, 10.0, 10.0, 12.0, 12.0, 12.0, 12.0, 12.0]
    g = dg.Geometry(12)
    d = dg.diagnose(2.5e9, r, 1.0, geometry=g)
    assert d.geometry is g and d.median_us == 11.0
    assert d.stddev_spread == pytest.approx(1.0540925533894598 / 11.0, rel=1e-12)      # stdev by hand: sqrt(10/9)
    assert d.reasons[0] == "floor = 2500.000 MB / 1.00 TB/s = 2500.000 µs"


def test_the_geometry_s_own_figures():
    g = dg.Geometry(300, sm_count=132, blocks_per_sm=2)
    assert (g.sms_with_work, g.share_sms, g.share_slots) == (132, 1.0, 300 / 264)
    assert dg.Geometry(12).share_slots is None and dg.Geometry(12).share_sms == 12 / 132


def test_the_robust_spread_ignores_one_slow_rep():
    """Quartiles of 1..11 (inclusive) are 3.5 and 8.5: IQR 5, / 1.349, / median 6; a 1,000 in place of the 11
    moves the mean and the stddev, not the quartiles."""
    xs = [float(i) for i in range(1, 12)]
    assert dg.robust_spread(xs) == pytest.approx(5 / 1.349 / 6, rel=1e-12)
    assert dg.robust_spread(xs[:-1] + [1000.0]) == dg.robust_spread(xs)
    assert dg.robust_spread([2.0] * 10) == 0.0
