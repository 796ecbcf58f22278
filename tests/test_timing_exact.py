"""Timing's summaries and ABBA, word for word, worked by hand (issue 27: mutation testing). No GPU: a Timing
is a list of reps, and abba() takes any two callables that return one."""
import math

import pytest

from launchlab.core import timing
from launchlab.core.timing import ABBA, Timing


def test_a_timing_by_hand():
    t = Timing([3.0, 1.0, 2.0, 10.0], "graph-cold", 4, "x")
    assert (t.n, t.median, t.mean, t.min, t.max) == (4, 2.5, 4.0, 1.0, 10.0)
    assert t.stddev == pytest.approx(math.sqrt(((1 + 9 + 4 + 36)) / 3)) and t.cv == pytest.approx(t.stddev / 4)
    assert t.l2 == "cold" and Timing([1.0], "graph").l2 == "hot" and Timing([1.0]).stddev == 0.0
    assert t.summary() == ("median 2.500 µs, stddev 4.082 µs (102.1%), min 1.000, max 10.000, n=4 (graph-cold, "
                           "cold L2)")
    shared = Timing([2.0], shared="2 other processes")
    assert shared.summary().endswith("(events, hot L2) [2 other processes]")
    assert t.to_dict() == {"reps_us": [3.0, 1.0, 2.0, 10.0], "method": "graph-cold", "launches_per_rep": 4,
                           "label": "x"}
    assert shared.to_dict() == {"reps_us": [2.0], "method": "events", "launches_per_rep": 1, "label": "",
                                "shared": "2 other processes"}
    assert Timing.from_dict(shared.to_dict()).to_dict() == shared.to_dict()
    assert math.isnan(Timing([0.0, 0.0]).cv)
    with pytest.raises(ValueError, match="a Timing needs at least one rep"):
        Timing([])


def test_abba_order_and_its_refusal():
    assert timing.abba_order(1) == ["A", "B"]
    assert timing.abba_order(3) == ["A", "B", "B", "A", "A", "B"]
    with pytest.raises(ValueError) as e:
        timing.abba_order(0)
    assert str(e.value) == "pairs must be at least 1"


def test_abba_runs_each_arm_in_order_and_keeps_every_rep():
    calls = []

    def arm(name, us):
        def measure():
            calls.append(name)
            return Timing([us + len(calls)])
        return measure
    r = timing.abba(arm("a", 10.0), arm("b", 20.0), labels=("fast", "slow"))
    assert calls == ["a", "b", "b", "a", "a", "b"] and r.order == ["A", "B", "B", "A", "A", "B"]   # 3 pairs
    assert r.medians("A") == [11.0, 14.0, 15.0] and r.medians("B") == [22.0, 23.0, 26.0]
    assert r.ratio() == pytest.approx(23.0 / 14.0)
    assert r.table().split("\n") == [
        "rep  arm                       median µs   stddev",
        "  0  A fast                       11.000    0.000",
        "  1  B slow                       22.000    0.000",
        "  2  B slow                       23.000    0.000",
        "  3  A fast                       14.000    0.000",
        "  4  A fast                       15.000    0.000",
        "  5  B slow                       26.000    0.000",
        "A fast: 14.000 µs   B slow: 23.000 µs   B/A = 1.643"]
    d = r.to_dict()
    assert set(d) == {"order", "results", "labels", "extra"} and d["labels"] == ["fast", "slow"]
    assert ABBA.from_dict(d).table() == r.table()


def test_the_table_says_when_the_gpu_was_shared():
    r = ABBA(["A", "B"], [Timing([1.0], shared="1 other process"), Timing([2.0])], extra={"k": 1})
    assert r.table().split("\n")[-1] == "measured on a shared GPU: 1 other process"
    assert r.to_dict()["extra"] == {"k": 1}


def test_copies_for_a_cold_l2_by_hand():
    l2 = 60 * 2 ** 20
    assert timing.copies_for(2 ** 20, l2) == 180                   # 3 x 60 MiB of 1 MiB copies
    assert timing.copies_for(7 * 2 ** 20, l2) == 26                # ceil(180 / 7)
    assert timing.copies_for(10 ** 9, l2) == 2                     # one copy larger than the L2: still two
    assert timing.copies_for(2 ** 20, l2, margin=1) == 60
    assert timing.copies_for(1, 1) == 3 and timing.copies_for(2, 3) == 5     # ceil(9 / 2)
    for fp, l2b in ((0, l2), (-1, l2), (1, 0), (1, -1)):
        with pytest.raises(ValueError) as e:
            timing.copies_for(fp, l2b)
        assert str(e.value) == "footprint and L2 size must be positive"


def test_from_dict_reads_every_key_and_defaults_the_missing_ones():
    t = Timing.from_dict({"reps_us": [1, 2]})
    assert (t.reps_us, t.method, t.launches_per_rep, t.label, t.shared) == ([1.0, 2.0], "events", 1, "", None)
    t = Timing.from_dict({"reps_us": [3], "method": "graph", "launches_per_rep": "327", "label": "x",
                          "shared": "1 other process"})
    assert (t.method, t.launches_per_rep, t.label, t.shared) == ("graph", 327, "x", "1 other process")
    r = ABBA.from_dict({"order": ["A", "B"], "results": [t.to_dict(), t.to_dict()], "labels": ["p", "q"]})
    assert r.extra == {} and r.labels == ("p", "q") and r.order == ["A", "B"]
    assert ABBA.from_dict(dict(r.to_dict(), extra={"ctx": 8})).extra == {"ctx": 8}


def test_an_empty_timing_is_refused_in_words():
    with pytest.raises(ValueError) as e:
        Timing([])
    assert str(e.value) == "a Timing needs at least one rep"
