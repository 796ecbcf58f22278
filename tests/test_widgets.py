"""The explorers' update functions (what the sliders show), in replay."""
import pytest

from launchlab import bandwidth, mode, occupancy, waves, widgets

pytestmark = pytest.mark.skipif(mode.is_live(), reason="replay values; live mode measures instead")


def test_bandwidth_explorer_shows_the_recorded_point():
    s = bandwidth.recorded()
    ex = widgets.BandwidthExplorer(s)
    r = ex.update(12, 256)
    assert r["source"] == "recorded" and r["tbs"] == s.at(12, 256).tbs and r["sms_with_work"] == 12
    assert "12 SMs with work" in ex.text(r)
    with pytest.raises(KeyError):
        ex.update(13, 256)


def test_wave_explorer_and_model():
    ex = widgets.WaveExplorer(waves.recorded())
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
    grid, block = ex.widget().children[0].children
    grid.value = 48
    block.value = 1024
    assert "grid 48 x block 1024" in ex.shown and f"{s.at(48, 1024).tbs:.2f} TB/s" in ex.shown

    ex = widgets.WaveExplorer(waves.recorded())
    res, grid = ex.widget().children[0].children
    grid.value = 265
    res.value = 1          # another residency keeps the grid slider near where it was, not at 1
    assert grid.value > 200 and grid.value in waves.recorded().at(1).grids
    grid.value = 133
    assert "grid 133 at 1 block(s)/SM = 2 wave(s) of 132" in ex.shown

    ex = widgets.OccupancyExplorer()
    block, regs, smem = ex.widget().children[0].children
    regs.value = 64
    block.value = 96
    assert "10 blocks/SM" in ex.shown and "limited by registers" in ex.shown
    smem.value = 100 * 1024
    assert "2 blocks/SM" in ex.shown and "limited by shared memory" in ex.shown


def test_every_explorer_marks_the_chosen_point_the_same_way():
    """One convention: an open black square at the slider's position, on every explorer's figure."""
    import matplotlib.pyplot as plt
    from launchlab import kda, rmsnorm
    cases = [(widgets.BandwidthExplorer(bandwidth.recorded()), dict(grid=48, block=256)),
             (widgets.WaveExplorer(waves.recorded()), dict(residency=2, grid=265)),
             (widgets.OccupancyExplorer(), dict(block=96, regs=64, smem=0)),
             (widgets.RMSExplorer(rmsnorm.recorded()), dict(n=7168, block=512)),
             (widgets.KDAExplorer(kda.recorded()), dict(tp=8, bv=32))]
    for ex, values in cases:
        text, fig = ex.render(**values)
        marks = [ln for ln in fig.axes[0].lines if ln.get_marker() == "s" and ln.get_markerfacecolor() == "none"]
        assert len(marks) == 1, type(ex).__name__
        assert text
        plt.close(fig)
