"""Block timelines: the arithmetic on synthetic stamps (any machine), and the stamps compiled in only where asked."""
import pytest

from launchlab.core import compiler, loader, timeline


def tl(starts, ends, sms, block=256):
    return timeline.Timeline("t", len(starts), block, starts, ends, sms)


def test_one_block_per_sm_for_its_whole_life_is_its_warps_over_the_slots():
    t = tl([0, 0, 0], [100, 100, 100], [0, 1, 2], block=256)          # 8 warps on each of 3 SMs
    assert t.sms_with_work == 3 and t.max_resident_per_sm() == 1
    assert t.achieved_pct() == pytest.approx(100 * 8 / 64)


def test_idle_time_on_an_sm_does_not_count_but_a_half_empty_sm_does():
    # SM 0: two blocks overlap for half the time -> (8 * 100 + 8 * 50) / 100 active / 64 warps
    t = tl([0, 50, 1000], [100, 100, 1100], [0, 0, 1])
    assert t.achieved_pct() == pytest.approx(100 * (8 * 150 + 8 * 100) / (100 + 100) / 64)
    assert t.max_resident_per_sm() == 2


def test_waves_open_when_a_block_takes_a_freed_slot():
    starts = [0, 0, 0, 0, 105, 106]
    ends = [100, 101, 102, 103, 205, 206]
    w = tl(starts, ends, [0, 1, 2, 3, 0, 1]).waves()
    assert [sorted(x) for x in w] == [[0, 1, 2, 3], [4, 5]]


def test_a_timeline_needs_one_stamp_per_block():
    with pytest.raises(ValueError, match="one start, end and SM per block"):
        timeline.Timeline("t", 3, 128, [0, 1], [2, 3], [0, 1])


@pytest.mark.parametrize("family, plain, stamped", [
    ("stream_read", "stream_read<4, 4>", "stream_read_timeline<4, 4>"),
    ("waves", "fixed_work", "fixed_work_timeline"),
    ("kda_decode", "kda_walk<0>", "kda_walk<0, true>"),
    ("kda_decode", "kda_decode<1>", "kda_decode<1, true>"),
])
def test_the_stamps_are_compiled_in_only_where_asked_and_keep_the_registers(family, plain, stamped):
    b = compiler.compile_offline(family)
    plain_sass, stamped_sass = b.sass(plain), b.sass(stamped)
    assert "GLOBALTIMER" not in plain_sass and "SMID" not in plain_sass
    assert "GLOBALTIMER" in stamped_sass and "SMID" in stamped_sass          # %globaltimer, %smid
    if family != "waves":     # fixed_work's residency is pinned by shared memory, whatever its registers
        regs = {e: loader.compiled_resources(family, e)[0].registers for e in (plain, stamped)}
        assert regs[stamped] <= regs[plain], regs    # (the loaded kernels' where NVRTC gives no ptxas report)


NCU_CSV = '''==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "stream_read": 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.12","127.0.0.1","void stream_read<4, 4>(const float *, long long, float *)","1","7","(256, 1, 1)","(12, 1, 1)","0","9.0","Command line profiler metrics","launch__block_size","","256"
"0","4242","python3.12","127.0.0.1","void stream_read<4, 4>(const float *, long long, float *)","1","7","(256, 1, 1)","(12, 1, 1)","0","9.0","Command line profiler metrics","launch__grid_size","","12"
"0","4242","python3.12","127.0.0.1","void stream_read<4, 4>(const float *, long long, float *)","1","7","(256, 1, 1)","(12, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","12.48"
"0","4242","python3.12","127.0.0.1","void stream_read<4, 4>(const float *, long long, float *)","1","7","(256, 1, 1)","(12, 1, 1)","0","9.0","Command line profiler metrics","sm__maximum_warps_per_active_cycle_pct","%","100"
"1","4242","python3.12","127.0.0.1","void stream_read<4, 4>(const float *, long long, float *)","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","launch__grid_size","","1,056"
"1","4242","python3.12","127.0.0.1","void stream_read<4, 4>(const float *, long long, float *)","1","7","(256, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","launch__block_size","","256"
==PROF== Disconnected from process 4242
'''


def test_ncu_csv_is_read_per_launch_in_launch_order():
    from launchlab.core import profile
    rows = profile.parse_csv(NCU_CSV)
    assert [r.launch for r in rows] == [0, 1]
    assert rows[0].grid == 12 and rows[0].block == 256 and rows[0].achieved_pct == pytest.approx(12.48)
    assert rows[0].theoretical_pct == 100 and rows[1].grid == 1056       # "1,056": thousands separators
    assert "stream_read<4, 4>" in rows[0].kernel


# ------------------------------------------------------------------ the H200 recording (issue 10)
def test_recorded_timelines_agree_with_ncu_within_ten_points():
    from launchlab.sections.s01_arithmetic import achieved
    d = achieved.recorded()
    assert d.ncu_error is None and len(d.vs_ncu()) == len(d.stream) + len(d.kda)
    assert d.max_abs_vs_ncu() <= 10
    for c, r in d.vs_ncu():
        assert (r.grid, r.block) == (c.grid, c.block), c.name        # ncu profiled the shape the timeline saw
        assert r.theoretical_pct == pytest.approx(c.theoretical_pct, abs=0.5)   # and agrees with the calculator


def test_recorded_timelines_show_the_geometry():
    from launchlab.sections.s01_arithmetic import achieved
    d = achieved.recorded()
    assert d.case("main").sms_with_work == 12 and d.case("fix").sms_with_work == 48
    assert d.case(achieved.stream_name(12)).sms_with_work == 12
    assert d.case(achieved.stream_name(1056)).timeline.max_resident_per_sm() == 8       # 8 per SM: one wave
    assert len(d.case("one past a wave, 1 block/SM").timeline.waves()) == 2              # block 133 waits
    assert d.case("two resident per SM").timeline.max_resident_per_sm() == 2
    assert 0 < d.tick_ns <= 1000                                                       # what a stamp resolves


def test_the_timeline_figure_names_its_colours_and_shows_blocks_sharing_an_sm():
    """Issue 41: the waves' colours have a legend, and a launch with two blocks on one SM at once gets an inset
    where the two stacked bars can be seen (a second, lighter bar in the same row); one block per SM gets none."""
    import matplotlib
    matplotlib.use("Agg")
    from dataclasses import dataclass

    from launchlab.core import figure

    @dataclass
    class Case:
        name: str
        timeline: timeline.Timeline

    one = Case("one per SM", tl([0, 0, 0, 105], [100, 100, 100, 205], [0, 1, 2, 0]))       # two waves
    two = Case("two per SM", tl([0, 0, 0, 0], [100, 100, 100, 100], [0, 0, 1, 1]))          # two at once
    fig = figure.block_timelines([one, two], sm_count=4)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["wave 1", "wave 2", "a block beside another on its SM"]
    insets = [c for a in fig.axes for c in a.child_axes]
    assert len(insets) == 1 and insets[0].get_title() == "SMs 0-1, magnified"
    assert len(insets[0].collections) == 4                                    # every block of SMs 0-1, drawn
    alphas = sorted(round(float(c.get_facecolor()[0][3]), 2) for c in insets[0].collections)
    assert alphas == [0.45, 0.45, 1.0, 1.0]                                   # the second block of a row: lighter
    alone = figure.block_timelines([one], sm_count=4)
    assert [t.get_text() for t in alone.legends[0].get_texts()] == ["wave 1", "wave 2"]
    assert not [c for a in alone.axes for c in a.child_axes]
    single = figure.block_timelines([Case("one wave", tl([0, 0], [10, 10], [0, 1]))], sm_count=4)
    assert [t.get_text() for t in single.legends[0].get_texts()] == ["every block (one wave)"]
    assert figure.legibility(fig) == []
