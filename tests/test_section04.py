"""§4: the recorded MLA split decode -- the lecture's grids, the derived floor's win, residency, the slot model,
the tp sweep and the peer -- and the explorer, on the H200 recording (any machine)."""
import pytest

from launchlab.core import mode

from launchlab.sections.s04_derive import explorers
from launchlab.kernels import mla, splits
from launchlab.sections.s04_derive import derive


@pytest.fixture(scope="module")
def data():
    return derive.recorded()


def test_the_recorded_arms_are_the_plans_the_course_makes_today(data):
    for a in data.arms:
        kw = {"resident": int(a.label[-1])} if "resident" in a.label else {}
        p = mla.plan(1, 16, data.ctx, a.floor, a.body, **kw)
        assert (a.splits, a.grid, a.blocks_per_sm, a.smem) == (p.split.splits, p.split.grid, p.blocks_per_sm, p.smem)
        assert a.timing.method == "graph-cold"                       # every time here is cold
        assert a.err_over_bound is None or a.err_over_bound <= 1.0


def test_headline_meets_the_issue(data):
    h = derive.headline(data)
    assert (h["mla_grid_hardcoded"], h["mla_grid_derived"]) == (128, 256)
    assert h["mla_derived_speedup"] >= 1.04                         # the ABBA medians, cold
    assert h["mla_bw_fraction_of_copy"] >= 0.70
    assert h["mla_resident1_over_resident2"] > 1.2                  # the second block per SM matters


def test_abba_reps_do_not_overlap(data):
    a, b = data.abba.medians("A"), data.abba.medians("B")
    assert len(a) == len(b) == 3 and min(a) > max(b)


def test_residency_calculator_and_driver_agree(data):
    assert all(r.calculator == r.driver for r in data.residency)
    assert [r.calculator for r in data.residency] == [2, 2, 1, 1, 1]
    offline = derive.residency_offline()
    assert [(r.body, r.smem, r.calculator) for r in offline] == [(r.body, r.smem, r.calculator) for r in data.residency]


def test_the_slot_model_puts_the_steps_where_the_slots_run_out(data):
    m = derive.fit_slots(data.swept("off"))
    assert m.slots == 264 and m.rounds(265) == [264, 1]
    pts = {a.grid: a.us for a in data.swept("off")}
    assert pts[280] > 1.2 * pts[264] and pts[132] > 1.2 * pts[256]     # measured steps past 132 and past 264
    assert m.predict(280, -(-data.ctx // 280)) > m.predict(264, -(-data.ctx // 264))


def test_tp_sweep_strands_only_one_head_tile(data):
    assert data.tp_arm(8, "hardcoded").grid == 128 and data.tp_arm(8, "derived").grid == 256
    assert data.tp_arm(4, "hardcoded").grid == data.tp_arm(4, "derived").grid == 256
    assert data.tp_arm(8, "hardcoded").us > 1.2 * data.tp_arm(8, "derived").us


def test_the_explorer_derives_and_reads_the_recording(data):
    ex = explorers.MLAExplorer(data)
    r = ex.update(131_072, 8, 2)
    assert r["split"].grid == 256 and ex.update(131_072, 8, 1)["split"].grid == 128
    if mode.is_live():               # relaunched now, at any shape, cold
        assert r["source"].startswith("measured now") and 0.8 < r["us"] / data.tp_arm(8, "derived").us < 1.25
        assert ex.update(20_000, 8, 1)["us"] > 0
    else:                            # the recording where the shape was recorded, the model elsewhere
        assert r["us"] == pytest.approx(data.tp_arm(8, "derived").us)
        assert ex.update(131_072, 8, 1)["us"] is None
    text, fig = ex.render(20_000, 4, 3)
    assert "more than fit" in text and f"{splits.split(20_000, 32, 1, blocks_per_sm=3).splits} splits" in text
