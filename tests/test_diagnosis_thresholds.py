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
