"""§1 claims, checked on the H200 recording (replay) -- the numbers the notebook shows."""
import statistics

import pytest

from launchlab.core import recordings
from launchlab.sections.s00_start import instruments
from launchlab.sections.s01_arithmetic import bandwidth, staircases


@pytest.fixture(scope="module")
def sweep():
    return bandwidth.recorded()


def test_stream_read_matches_numpy(sweep):
    errs = sweep.references
    assert set(errs) == {"1x1", "4x1", "1x4", "4x4"} and max(errs.values()) < 1e-5


def test_peak_read_reaches_the_copy_ceiling(sweep):
    """Issue target: the best streaming read pulls >= 95% of the device-to-device copy bandwidth."""
    assert 3.5 < sweep.copy_tbs < 5.0
    assert sweep.peak().tbs >= 0.95 * sweep.copy_tbs, (sweep.peak().tbs, sweep.copy_tbs)


def test_one_block_uses_a_sliver_of_the_machine(sweep):
    assert sweep.at(1, 1024).tbs < 0.06 * sweep.copy_tbs


@pytest.mark.parametrize("a,b", [((12, 1024), (48, 256)), ((1, 1024), (8, 128)), ((24, 512), (48, 256)),
                                 ((2, 1024), (8, 256))])
def test_same_bytes_in_flight_same_bandwidth(sweep, a, b):
    """Launch shapes with equal resident threads (so equal bytes in flight) get about the same bandwidth,
    whatever their block count: 12 blocks of 1024 vs 48 blocks of 256."""
    pa, pb = sweep.at(*a), sweep.at(*b)
    assert sweep.in_flight(pa) == sweep.in_flight(pb)
    assert 0.8 < pa.tbs / pb.tbs < 1.25, (a, pa.tbs, b, pb.tbs)


def test_more_bytes_per_thread_means_fewer_threads_needed(sweep):
    """At a small grid the float4 x 4 arm beats the scalar x 1 arm by a wide margin (16x the bytes in flight)."""
    fast, slow = sweep.at(16, 256, 4, 4), sweep.at(16, 256, 1, 1)
    assert fast.tbs > 4 * slow.tbs


def test_wave_steps_where_the_calculator_says(sweep):
    wd = staircases.recorded()
    stairs, ramp = wd.staircases, wd.ramp
    assert [s.residency for s in stairs] == [1, 2, 4]
    for s in stairs:
        assert s.blocks_per_wave == 132 * s.residency
        assert s.observed_wave() == s.blocks_per_wave
        assert [g0 for g0, _ in s.steps()] == [s.blocks_per_wave * k for k in (1, 2, 3)]
        assert staircases.step_share(s.grids, s.medians, s.blocks_per_wave) > 0.8
    assert staircases.step_share(ramp.grids, ramp.medians, ramp.blocks_per_wave) < 0.3


def test_wave_references():
    e = staircases.recorded().reference_max_rel_err
    assert e["fixed_bytes"] < 1e-5 and e["fixed_work"] < 1e-4


def test_instruments_disagree_as_documented():
    ins = instruments.recorded().instruments
    assert ins.graph.median < ins.events.median < ins.events_naive.median


def test_the_sweep_and_the_waves_share_one_recording_file_without_clashing():
    d = recordings.load("section01").data
    parts = [bandwidth.DOOR.dump(bandwidth.recorded()), staircases.DOOR.dump(staircases.recorded())]
    assert set(parts[0]).isdisjoint(parts[1]) and set(parts[0]) | set(parts[1]) == set(d)


def test_headline_figures(sweep):
    h = bandwidth.headline(sweep)
    assert h["copy_ceiling_tbs"] == sweep.copy_tbs and h["peak_read_tbs"] == sweep.peak().tbs
    w = staircases.headline(staircases.recorded())
    assert [w[f"wave_observed_one_wave_grid_{r}per_sm"] for r in (1, 2, 4)] == [132, 264, 528]


@pytest.mark.gpu
def test_a_stream_point_counts_its_probe_as_its_first_rep():
    """The probe that sizes a point's reps is timed like them and kept as the first: `reps` reps where the
    budget allows them, and never fewer than 3 where it does not (a grid of 1 reads the buffer with one block)."""
    from launchlab.kernels import stream_read
    sr = stream_read.StreamRead(1 << 24)
    t = sr.time(264, 256, reps=7)
    assert t.n == 7 and t.method == "events" and min(t.reps_us) > 0
    slow = sr.time(1, 128, reps=7, budget_s=1e-9)
    assert slow.n == 3 and min(slow.reps_us) > 0
    assert statistics.median(slow.reps_us) > 5 * t.median      # one block reading 16 MiB is the slow one
