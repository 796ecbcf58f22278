"""The explorers' update functions (what the sliders show), in replay."""
import pytest

from launchlab.core import explorer, mode, occupancy
from launchlab.sections.s01_arithmetic import bandwidth, staircases
from launchlab.sections.s01_arithmetic.explorers import BandwidthExplorer, OccupancyExplorer, WaveExplorer
from launchlab.sections.s02_width.explorers import RMSExplorer
from launchlab.sections.s03_starvation.explorers import KDAExplorer
from launchlab.sections.s04_derive.explorers import MLAExplorer
from launchlab.sections.s08_reshape.explorers import SplitExplorer
from launchlab.sections.s09_lab.explorers import LabSweep

pytestmark = pytest.mark.skipif(mode.is_live(), reason="replay values; live mode measures instead")


def test_bandwidth_explorer_shows_the_recorded_point():
    s = bandwidth.recorded()
    ex = BandwidthExplorer(s)
    r = ex.update(12, 256)
    assert r["source"] == "recorded" and r["tbs"] == s.at(12, 256).tbs and r["sms_with_work"] == 12
    assert "12 SMs with work" in ex.text(r)
    with pytest.raises(KeyError):
        ex.update(13, 256)


def test_wave_explorer_and_model():
    ex = WaveExplorer(staircases.recorded())
    r = ex.update(2, 265)
    assert r["waves"] == 2 and r["blocks_per_wave"] == 264
    assert r["median_us"] == pytest.approx(r["predicted_us"], rel=0.15)


def test_occupancy_explorer():
    o = OccupancyExplorer().update(256, 64, 0)
    assert isinstance(o, occupancy.Occupancy) and o.blocks_per_sm == 4


def test_moving_the_sliders_redraws():
    """Build the real ipywidgets, move each control, and check what the explorer shows follows."""
    s = bandwidth.recorded()
    ex = BandwidthExplorer(s)
    grid, block = ex.widget().children[0].children
    grid.value = 48
    block.value = 1024
    assert "grid 48 x block 1024" in ex.shown and f"{s.at(48, 1024).tbs:.2f} TB/s" in ex.shown

    ex = WaveExplorer(staircases.recorded())
    res, grid = ex.widget().children[0].children
    grid.value = 265
    res.value = 1          # another residency keeps the grid slider near where it was, not at 1
    assert grid.value > 200 and grid.value in staircases.recorded().at(1).grids
    grid.value = 133
    assert "grid 133 at 1 block(s)/SM = 2 wave(s) of 132" in ex.shown

    ex = OccupancyExplorer()
    view = ex.widget()
    (block,), (regs, regs_box), (smem, smem_box) = (row.children for row in view.children[:3])
    regs.value = 64
    block.value = 96
    assert "10 blocks/SM" in ex.shown and "limited by registers" in ex.shown and regs_box.value == 64
    smem.value = 100 * 1024
    assert "2 blocks/SM" in ex.shown and "limited by shared memory" in ex.shown
    smem_box.value = 100 * 1024 + 128         # an exact value typed into the box moves the slider and redraws
    assert smem.value == 100 * 1024 + 128 and f"{100 * 1024 + 128} B smem" in ex.shown
    regs_box.value = 65
    assert regs.value == 65 and "65 regs/thread" in ex.shown


def test_every_explorer_marks_the_chosen_point_the_same_way():
    """One convention: an open black square at the slider's position, on every explorer's figure."""
    import matplotlib.pyplot as plt

    from launchlab.sections.s02_width import rmsnorm
    from launchlab.sections.s03_starvation import kda
    from launchlab.sections.s04_derive import derive
    from launchlab.sections.s08_reshape import reassociation
    cases = [(BandwidthExplorer(bandwidth.recorded()), dict(grid=48, block=256)),
             (WaveExplorer(staircases.recorded()), dict(residency=2, grid=265)),
             (OccupancyExplorer(), dict(block=96, regs=64, smem=0)),
             (RMSExplorer(rmsnorm.recorded()), dict(n=7168, block=512)),
             (KDAExplorer(kda.recorded()), dict(tp=8, bv=32)),
             (MLAExplorer(derive.recorded()), dict(ctx=131_072, tp=8, k=2)),
             (SplitExplorer(reassociation.recorded()), dict(s=128))]
    for ex, values in cases:
        text, fig = ex.render(**values)
        marks = [ln for ln in fig.axes[0].lines if ln.get_marker() == "s" and ln.get_markerfacecolor() == "none"]
        assert len(marks) == 1, type(ex).__name__
        assert text
        plt.close(fig)


def test_an_explorer_carries_a_static_preview_for_front_ends_that_cannot_run_it():
    """Untrusted or on a web page, the PNG shows: the first position's figure, its text and a run-me note."""
    import base64
    view = BandwidthExplorer(bandwidth.recorded()).widget()
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    png = base64.b64decode(bundle["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000
    assert "run the cell to explore" in bundle["text/plain"] and "grid 12 x block 256" in bundle["text/plain"]
    assert "VBox(" not in bundle["text/plain"]


def test_explorer_text_wraps_at_words():
    long = "block 288, 33 regs/thread, 1024 B smem: 5 blocks/SM (45/64 warps, 70% occupancy), limited by registers; 660 blocks per wave on 132 SMs"
    lines = explorer.wrap(long).splitlines()
    assert len(lines) == 2 and all(len(x) <= explorer.WRAP for x in lines)
    assert " ".join(x.strip() for x in lines) == long


def test_a_notebook_read_on_a_web_page_shows_each_explorer_as_a_picture():
    """nbconvert's HTML (what a web page shows) falls back to the preview PNG: no `VBox(...)` text."""
    import re
    from pathlib import Path

    from nbconvert import HTMLExporter
    html, _ = HTMLExporter().from_filename(str(Path(__file__).resolve().parent.parent / "notebooks" / "01_the_arithmetic.ipynb"))
    assert "VBox(children" not in html and "HBox(children" not in html
    for name in ("BandwidthExplorer", "WaveExplorer", "OccupancyExplorer"):
        i = html.index(name)
        assert re.search(r'<img[^>]+src="data:image/png;base64,', html[i:i + 4000]), name


def test_the_lab_sweep_shows_the_recorded_step_for_each_offender_knob():

    from launchlab.sections.s09_lab import lab
    w = LabSweep(lab.recorded())
    r = w.update("kda_bv", 32)
    assert r["grid"] == [4, 12] and r["sms"] == 48 and r["source"] == "recorded on the H200"
    assert r["ms"] < r["base_ms"]                                   # value tiles beat main's grid = n_head
    texts = {w.render(k, v)[0] for k, vs in lab.SWEEPS.items() for v in vs}
    assert len(texts) == sum(len(v) for v in lab.SWEEPS.values())   # every point reads differently
    with pytest.raises(ValueError, match="not a swept point"):
        lab.point(lab.recorded(), "kda_bv", 48)


def test_the_split_explorer_shows_each_recorded_count_and_refuses_the_rest():
    from launchlab.sections.s08_reshape import reassociation
    d = reassociation.recorded()
    ex = SplitExplorer(d)
    view = ex.widget()
    (s,) = view.children[0].children
    assert list(s.options) == [b.splits for b in d.by_splits]              # replay: the recorded counts only
    s.value = 256
    assert "the same bytes as S = 256's in all 8,192 outputs" in ex.shown
    s.value = 1
    one = d.at(1)
    assert f"{one.n_differ:,} of 8,192 outputs differ" in ex.shown and f"{one.sign_flips:,} change sign" in ex.shown
    with pytest.raises(KeyError, match="was not recorded"):
        ex.update(192)


@pytest.mark.slow                       # every SM-count slider moved through its range (~20 s)
def test_the_sm_count_sliders_move_the_machine_under_the_kernel():
    """Issue 29's explorers: the slice's SMs and the grid (§1), the slice's SMs and the arm (§5), on the recorded
    slices; moving the SM slider keeps the grid at the same place on the new slice's staircase."""
    from launchlab.sections.s01_arithmetic import smaller_gpus as waves_on
    from launchlab.sections.s01_arithmetic.explorers import SliceWaveExplorer
    from launchlab.sections.s03_starvation import smaller_gpus as kda_on
    from launchlab.sections.s05_sharding.explorers import SliceStarvationExplorer
    ex = SliceWaveExplorer(waves_on.recorded())
    sms, grid = ex.widget().children[0].children
    grid.value = 17
    assert "grid 17 on 16 SMs = 2 wave(s) of 16" in ex.shown and "step falls after 16 blocks" in ex.shown
    place = list(grid.options).index(17)
    sms.value = 132
    assert list(grid.options).index(grid.value) == place and grid.value == 133
    assert "grid 133 on 132 SMs = 2 wave(s) of 132" in ex.shown and "(recorded on 132 SMs)" in ex.shown

    ex = SliceStarvationExplorer(kda_on.recorded())
    sms, arm = ex.widget().children[0].children
    assert "12 of the slice's 16 SMs (75%" in ex.shown and "-> unclear" in ex.shown
    sms.value = 64
    assert "12 of the slice's 64 SMs (19%" in ex.shown and "-> starvation" in ex.shown
    arm.value = "fix"
    assert "48 blocks ran on 48 of the slice's 64 SMs" in ex.shown
    arm.value = "tuned"
    assert "tuned on 64 SMs: 48 blocks;" in ex.shown
    with pytest.raises(ValueError, match="no arm 'fast'; the arms are main, fix, tuned"):
        kda_on.point(16, "fast")


def test_a_redraw_is_one_assignment_with_its_picture_s_size():
    """Issue 42: an explorer redraws its text and picture in one assignment to its view (an Output cleared and
    refilled shrank to the text between them, and the slide jumped), and the picture says its pixel size (the
    size the PNG decodes to) so its space is kept before it is decoded."""
    import base64
    import re

    import matplotlib.pyplot as plt

    class Out:                               # the view: what _show assigns, counted
        def __init__(self):
            self.sets = []

        def __setattr__(self, k, v):
            if k == "value":
                self.sets.append(v)
            object.__setattr__(self, k, v)

    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.plot([0, 1], [0, 1])
    out = Out()
    BandwidthExplorer(bandwidth.recorded())._show(out, "12 SMs with work", fig)
    assert len(out.sets) == 1                                         # one assignment: text and picture together
    html = out.value
    assert html.startswith(explorer.TEXT_STYLE) and "12 SMs with work" in html
    m = re.search(r'<img src="data:image/png;base64,([^"]+)" width="(\d+)" height="(\d+)"', html)
    import io
    h, w = plt.imread(io.BytesIO(base64.b64decode(m.group(1)))).shape[:2]     # decoded by matplotlib, not parsed
    assert m and (int(m.group(2)), int(m.group(3))) == (w, h) and w > h > 200
    with pytest.raises(ValueError):
        explorer.picture_html(b"GIF89a" + bytes(30))


def test_quick_moves_in_a_kernel_draw_once_for_the_last_position():
    """Issue 42: in a kernel (an event loop running), moves that arrive faster than the panel draws are folded into
    one drawing of the last position, SETTLE_S after the first; a move after that draws again; outside a loop a
    move draws at once (the test above)."""
    import asyncio

    s = bandwidth.recorded()
    ex = BandwidthExplorer(s)
    grid, block = ex.widget().children[0].children
    first = ex.shown
    grids = [g for g in grid.options if g != grid.value][-5:]
    assert len(grids) == 5

    async def presses():
        for g in grids:                       # five presses, as quick as the kernel takes them
            grid.value = g
        drawn_at_once = ex.shown
        await asyncio.sleep(explorer.SETTLE_S * 6)
        after_quick = (ex.shown, getattr(ex, "draws", 0))
        block.value = 1024                    # a later move draws again
        await asyncio.sleep(explorer.SETTLE_S * 6)
        return drawn_at_once, after_quick, (ex.shown, ex.draws)

    drawn_at_once, (shown, draws), (later, draws2) = asyncio.run(presses())
    assert drawn_at_once == first                                     # nothing drawn while the moves came in
    assert draws == 1 and f"grid {grids[-1]} x block" in shown         # one drawing, of the last position
    assert draws2 == 2 and f"grid {grids[-1]} x block 1024" in later


def test_an_error_while_drawing_in_a_kernel_shows_in_the_view():
    import asyncio

    ex = BandwidthExplorer(bandwidth.recorded())
    grid, _ = ex.widget().children[0].children

    def broken(**values):
        raise ValueError("no such point")
    ex.render = broken

    async def press():
        grid.value = [g for g in grid.options if g != grid.value][0]
        await asyncio.sleep(explorer.SETTLE_S * 6)
    asyncio.run(press())
    assert "ValueError: no such point" in ex._out.value


def test_the_view_fits_the_explorer_s_text_to_the_page_width():
    """Issue 42: on a slide at 18 px, a line past 110 characters wrapped mid-slide (01's occupancy explorer printed
    165); the view fits each line at word boundaries, its continuation hung under it, the text itself kept whole."""
    import html as html_

    class Out:
        value = ""

    long = "blocks/SM each resource allows: " + ", ".join(f"resource{i} {i * 7}" for i in range(14))
    assert len(long) > explorer.WRAP + 40
    out = Out()
    ex = BandwidthExplorer(bandwidth.recorded())
    ex._show(out, long + "\nshort line", None)
    body = html_.unescape(out.value[len(explorer.TEXT_STYLE):out.value.index("</pre>")])
    lines = body.split("\n")
    assert len(lines) >= 3 and all(len(x) <= explorer.WRAP for x in lines) and lines[-1] == "short line"
    assert lines[1].startswith("  ") and " ".join(x.strip() for x in lines[:-1]) == long
    assert ex.shown == long + "\nshort line"


def test_the_views_text_is_escaped_so_a_kernel_name_with_template_arguments_stays_whole():
    """A kernel's name is text, not markup: `reduce_kernel<512, 1>` and `a & b` must reach the browser as written,
    and nothing in an explorer's text can open a tag in the page (a learner's own label included)."""
    import html as htmlmod

    class Out:
        value = ""

    out = Out()
    said = "void at::native::reduce_kernel<512, 1>(T3) & <img src=x onerror=alert(1)>"
    BandwidthExplorer(bandwidth.recorded())._show(out, said, None)
    body = out.value[len(explorer.TEXT_STYLE):-len("</pre>")]
    assert "<" not in body and ">" not in body and htmlmod.unescape(body) == said
