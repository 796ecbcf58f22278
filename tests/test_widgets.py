"""The explorers' update functions (what the sliders show), in replay."""
import pytest

from launchlab import bandwidth, mode, occupancy, waves, widgets

pytestmark = pytest.mark.skipif(mode.is_live(), reason="replay values; live mode measures instead")


def test_bandwidth_explorer_shows_the_recorded_point():
    s = bandwidth.recorded()
    ex = widgets.BandwidthExplorer(s)
    r = ex.update(256, 12)
    assert r["source"] == "recorded" and r["tbs"] == s.at(256, 12).tbs and r["sms_with_work"] == 12
    assert "12 SMs with work" in ex.text(r)
    with pytest.raises(KeyError):
        ex.update(256, 13)


def test_wave_explorer_and_model():
    stairs, _ = waves.recorded()
    ex = widgets.WaveExplorer(stairs)
    r = ex.update(2, 265)
    assert r["waves"] == 2 and r["blocks_per_wave"] == 264
    assert r["median_us"] == pytest.approx(r["predicted_us"], rel=0.15)


def test_occupancy_explorer():
    o = widgets.OccupancyExplorer().update(256, 64, 0)
    assert isinstance(o, occupancy.Occupancy) and o.blocks_per_sm == 4


def test_moving_the_sliders_redraws():
    """Build the real ipywidgets, move each control, and check what the explorer shows follows."""
    s = bandwidth.recorded()
    ex = widgets.BandwidthExplorer(s)
    (block, grid), _ = ex.widget().children[0].children, None
    grid.value = 48
    block.value = 1024
    assert "grid 48 x block 1024" in ex.shown and f"{s.at(1024, 48).tbs:.2f} TB/s" in ex.shown

    stairs, _ = waves.recorded()
    ex = widgets.WaveExplorer(stairs)
    res, grid = ex.widget().children[0].children
    res.value = 1
    grid.value = 133
    assert "grid 133 at 1 block(s)/SM = 2 wave(s) of 132" in ex.shown

    ex = widgets.OccupancyExplorer()
    block, regs, smem = ex.widget().children[0].children
    regs.value = 64
    block.value = 96
    assert "10 blocks/SM" in ex.shown and "limited by registers" in ex.shown
    smem.value = 100 * 1024
    assert "2 blocks/SM" in ex.shown and "limited by shared memory" in ex.shown
