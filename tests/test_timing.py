import statistics

import pytest

from launchlab.core import timing


def test_timing_summary_keeps_every_rep():
    t = timing.Timing([3.0, 1.0, 2.0, 10.0])
    assert t.reps_us == [3.0, 1.0, 2.0, 10.0]
    assert t.median == 2.5 and t.min == 1.0 and t.max == 10.0
    assert t.stddev == pytest.approx(statistics.stdev([3, 1, 2, 10]))
    assert "median 2.500 µs" in t.summary()
    assert timing.Timing.from_dict(t.to_dict()).reps_us == t.reps_us
    with pytest.raises(ValueError):
        timing.Timing([])


def test_abba_order_alternates_which_arm_goes_first():
    assert timing.abba_order(3) == ["A", "B", "B", "A", "A", "B"]
    assert timing.abba_order(1) == ["A", "B"]
    with pytest.raises(ValueError):
        timing.abba_order(0)


def test_abba_runs_arms_in_that_order_and_reports_per_rep():
    calls = []

    def arm(name, us):
        def run():
            calls.append(name)
            return timing.Timing([us, us + 0.5, us - 0.5])
        return run
    res = timing.abba(arm("a", 10.0), arm("b", 5.0), pairs=3, labels=("old", "new"))
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert res.medians("A") == [10.0, 10.0, 10.0] and res.ratio() == pytest.approx(0.5)
    text = res.table()
    assert text.count("old") >= 3 and "B/A = 0.500" in text
    assert timing.ABBA.from_dict(res.to_dict()).order == res.order


@pytest.mark.gpu
def test_events_and_graph_on_the_gpu():

    from launchlab.kernels import waves
    w = waves.WaveKernels(max_grid=8)
    one = lambda: w.launch_work(1, 1, 32, iters=64)  # noqa: E731
    ev = timing.events(one, reps=20)
    gr = timing.graph(one, launches=100, reps=5)
    assert ev.n == 20 and gr.launches_per_rep == 100 and gr.method == "graph"
    assert 0 < gr.median < ev.median * 5


@pytest.mark.gpu
def test_spin_waits_at_least_what_it_was_asked():
    import cupy as cp
    timing.spin(30.0)
    cp.cuda.Device().synchronize()
    assert int(timing._spin_state["buf"].get()[0]) >= 30_000
