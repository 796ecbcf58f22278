"""This GPU with N SMs (issue 29): which N a device allows, the refusals, and on a GPU that every launch inside a
slice ran on at most N SMs (its %smid stamps), including a kernel first loaded inside the slice."""
import json
from pathlib import Path

import numpy as np
import pytest

from launchlab.core import mode, slices

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "data" / "gpu_runs" / "2026-12-02-h200-green-probe.json"


def test_the_h200_granularity_is_the_recorded_one():
    dev = json.loads(PROBE.read_text())["device"]
    assert slices.H200 == slices.Granularity(dev["sm_count"], dev["min_partition"], dev["alignment"])


def test_the_recorded_probe_shows_the_trap_and_the_way_round_it():
    """The probe's rows: a green context pushed current held a function loaded before it to N SMs, while a
    module loaded inside it ran on the whole GPU (CuPy made the primary context current again); the split
    rounds 12 up to 16 and refuses 136."""
    rows = {(r["n"], i): r for i, r in enumerate(json.loads(PROBE.read_text())["rows"])}
    by_n = {}
    for (n, _), r in rows.items():
        by_n.setdefault(n, r)
    for n in (8, 16, 32, 64, 128):
        assert by_n[n]["split_sm_count"] == n and by_n[n]["stale_module_sms_seen"] == n
        assert by_n[n]["sms_seen"] == 132
    assert by_n[12]["split_sm_count"] == 16 and "INVALID_RESOURCE_CONFIGURATION" in by_n[136]["error"]


def test_the_allowed_counts_follow_the_device():
    assert slices.H200.allowed() == list(range(8, 129, 8)) + [132]
    assert slices.Granularity(108, 4, 2).allowed()[:3] == [4, 6, 8] and slices.Granularity(108, 4, 2).allowed()[-1] == 108
    assert slices.Granularity(64, 8, 8).allowed()[-1] == 64          # a whole device that is itself aligned
    assert slices.H200.describe() == "8, 16, 24, ..., 128, or 132 (the whole GPU)"


@pytest.mark.parametrize("n, words", [
    (0, "at least 8 SMs"), (4, "at least 8 SMs"), (-16, "at least 8 SMs"),
    (12, "silently round 12 up to 16"), (130, "multiple of 8"), (136, "the GPU has 132 SMs"),
    (2.5, "whole number"), (True, "whole number"), ("16", "whole number"), (None, "whole number"),
])
def test_a_count_the_gpu_cannot_make_is_refused_with_the_allowed_values(n, words):
    with pytest.raises(slices.SliceError) as e:
        slices.check(n)
    assert words in str(e.value) and "8, 16, 24, ..., 128, or 132 (the whole GPU)" in str(e.value)


@pytest.mark.parametrize("n", [8, 16, 128, 132, np.int64(64)])
def test_an_allowed_count_passes(n):
    assert slices.check(n) == int(n) and type(slices.check(n)) is int


def test_proof_refuses_a_launch_that_left_the_slice():
    s = slices.SMSlice(16)
    assert s.prove([0, 1, 2, 3] * 40) == 4 and s.prove(range(16)) == 16
    with pytest.raises(slices.SliceError, match="ran on 17 distinct SMs"):
        s.prove(range(17))


@pytest.mark.skipif(mode.is_live(), reason="replay only")
def test_a_slice_in_replay_says_it_needs_a_gpu():
    with pytest.raises(mode.ModeError, match="a slice of 16 SMs needs a CUDA GPU"):
        with slices.SMSlice(16):
            pass
    assert slices.active() is None


# ---------------------------------------------------------------- on the GPU
@pytest.mark.gpu
def test_the_device_reports_its_granularity():
    g, why = slices.granularity()
    assert why == "" and g is not None
    from launchlab.core import hardware
    assert g.sm_count == hardware.from_device().sm_count
    if g.sm_count == 132:
        assert g == slices.H200


def _stamped_waves(grid: int):
    """fixed_work's stamped twin (kernels/waves.cu, timeline on) at one block per SM: the SMs its blocks ran on."""
    from launchlab.core import timeline
    from launchlab.kernels import waves
    w = waves.WaveKernels()
    tl = timeline.capture(waves.FAMILY, lambda: w.launch_work(grid, residency=1, timeline=True), grid, waves.BLOCK,
                          "slice check")
    return tl


@pytest.mark.gpu
@pytest.mark.parametrize("n", [16, 32, 64, 128])
def test_every_launch_inside_a_slice_runs_on_its_sms(n):
    with slices.SMSlice(n) as s:
        assert slices.active() is s and not s.whole and "green context" in s.describe()
        tl = _stamped_waves(528)
        assert s.prove(tl.sm) == n                  # 528 blocks reach every SM of the slice, and no other
    assert slices.active() is None
    assert len(set(_stamped_waves(528).sm)) == _whole()       # out of the slice: the whole GPU again


def _whole() -> int:
    from launchlab.core import hardware
    return hardware.from_device().sm_count


@pytest.mark.gpu
def test_a_kernel_first_loaded_inside_a_slice_stays_in_it():
    """The trap the issue met: CuPy loading a module makes the primary context current. On the slice's stream
    the launch stays in the slice anyway."""
    from launchlab.core import loader
    loader._kernels.clear()
    loader._modules.clear()
    with slices.SMSlice(16) as s:
        tl = _stamped_waves(264)
        assert s.prove(tl.sm) == 16


@pytest.mark.gpu
def test_the_whole_gpu_is_the_ordinary_context():
    with slices.SMSlice(_whole()) as s:
        assert s.whole and "ordinary context" in s.describe()
        assert s.prove(_stamped_waves(528).sm) == _whole()


@pytest.mark.gpu
def test_a_bad_count_is_refused_before_anything_is_made():
    with pytest.raises(slices.SliceError, match="round 12 up to 16"):
        with slices.SMSlice(12):
            pass
    assert slices.active() is None
    with slices.SMSlice(8) as s:                   # and the next slice still works
        assert s.prove(_stamped_waves(132).sm) == 8


def test_a_sliced_spec_keeps_every_per_sm_limit():
    from launchlab.core import hardware, occupancy
    s = hardware.sliced("H200", 16)
    assert s.sm_count == 16 and s.max_blocks_per_sm == 32 and s.smem_per_sm == hardware.H200.smem_per_sm
    assert hardware.sliced("H200", 132) is hardware.H200
    assert occupancy.occupancy(256, 32, 0, s).blocks_per_wave == 16 * 8       # the calculator's wave shrinks
    for bad in (0, 133, -8):
        with pytest.raises(ValueError, match="holds 1 to 132 SMs"):
            hardware.sliced("H200", bad)


def test_outside_a_slice_nothing_is_said_and_streams_are_ordinary():
    assert slices.active() is None and slices.green() is None and slices.note() == ""


# ---------------------------------------------------------------- the course's instruments inside a slice
@pytest.mark.gpu
def test_inside_a_slice_the_hardware_the_calculator_and_every_timing_read_n():
    from launchlab.core import hardware, occupancy, sharing, timing
    from launchlab.kernels import waves
    w = waves.WaveKernels()
    with slices.SMSlice(32):
        spec = hardware.from_device()
        assert spec.sm_count == 32 and spec.name == hardware._properties(0).name
        assert occupancy.occupancy(256, 32, 0, spec).blocks_per_wave == 32 * 8
        assert occupancy.occupancy(256, 32, 0).blocks_per_wave == 32 * 8          # the calculator's default "H200"
        assert hardware.spec("H200").sm_count == 32 and hardware.spec(hardware.H200).sm_count == 132
        from launchlab.kernels import kda_decode
        from launchlab.sections.s09_lab import lab
        assert lab.sms() == 32 and kda_decode.geometry(12, kda_decode.V, "store", "walk").share_sms == 12 / 32
        assert "on 32 of the GPU's 132 SMs (a green context)" in sharing.note()
        t = timing.events(lambda: w.launch_work(33, 1), reps=3)
        assert "32 of the GPU's 132 SMs" in str(t)
        tl = _stamped_waves(64)
        assert tl.sm_count == 32                      # the timeline reads the slice's SMs too
    assert hardware.from_device().sm_count == _whole() and "green context" not in sharing.note()


@pytest.mark.gpu
def test_a_cuda_graph_captured_and_replayed_inside_a_slice_stays_in_it():
    """timing.graph makes its own stream: inside a slice, one of the slice's (slices.stream). The fix's 48
    stamped blocks, replayed from the graph, ran on 16 SMs."""
    from launchlab.core import timeline, timing
    from launchlab.kernels import kda_decode
    b = kda_decode.Bench(12)
    p = kda_decode.plan(12, kda_decode.V, kda_decode.BV_TILED, "rn", "walk")

    def once():
        kda_decode.step(b.q, b.k, b.vv, b.g, b.beta, b.state, b.o, b.scratch, kda_decode.BV_TILED, "rn", "walk",
                        timeline=True)
    with slices.SMSlice(16) as s:
        tl = timeline.capture(kda_decode.FAMILY, lambda: timing.graph(once, launches=1, reps=1, warmup=1),
                              p.blocks, p.block, "graph in a slice")
        assert p.blocks == 48 and s.prove(tl.sm) == 16
    tl = timeline.capture(kda_decode.FAMILY, lambda: timing.graph(once, launches=1, reps=1, warmup=1),
                          p.blocks, p.block, "graph on the whole GPU")
    assert tl.sms_with_work == 48


@pytest.mark.gpu
def test_abba_and_the_gates_work_inside_a_slice():
    """Both arms of one build, flipped by a gate, interleaved inside one slice: the fix beats main there too."""
    from launchlab.core import gates, timing
    from launchlab.kernels import kda_decode
    b = kda_decode.Bench(12)

    def arm(vt: str, elide: str):
        def run():
            with gates.setting(KDA_BODY="walk", KDA_VT=vt, KDA_ELIDE=elide):
                return b.time(reps=3)
        return run
    with slices.SMSlice(16):
        ab = timing.abba(arm("0", "store"), arm("1", "rn"), pairs=2)
    assert ab.order == ["A", "B", "B", "A"] and ab.ratio() < 1
    assert all("16 of the GPU's 132 SMs" in (r.shared or "") for r in ab.results)


def test_without_green_contexts_a_slice_is_the_whole_gpu_and_says_so(monkeypatch, capsys):
    """An older driver or a cuda-bindings without the API: the slice falls back to the whole GPU in one line,
    never silently, and describes itself so."""
    from launchlab.core import hardware
    monkeypatch.setattr(slices.mode, "require_live", lambda what: None)
    monkeypatch.setattr(slices, "granularity", lambda device=0: (None, "this cuda-bindings has no green contexts"))
    monkeypatch.setattr(hardware, "from_device", lambda device_id=0: hardware.H200)
    with slices.SMSlice(16) as s:
        assert s.whole and s.n == 132 and slices.green() is None and slices.note() == ""
        assert "not 16" in s.fallback and "the whole GPU (132 SMs; green contexts unavailable" in s.describe()
        assert hardware.spec("H200").sm_count == 132
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "running on the whole GPU (132 SMs), not 16" in out
    assert slices.active() is None


# ---------------------------------------------------------------- a slice inside a slice
@pytest.mark.parametrize("inner, outer, ok", [
    (8, 16, True), (16, 16, True),                  # fewer, and exactly as many: cut from the outer slice's SMs
    (24, 16, False), (32, 16, False),               # more than the slice it is in
    (128, 128, True), (132, 128, False),            # the whole GPU inside a green slice is more than the slice
])
def test_a_slice_inside_a_slice_holds_at_most_the_outer_ones_sms(inner, outer, ok):
    if ok:
        assert slices.check(inner, within=outer) == inner
    else:
        with pytest.raises(slices.SliceError) as e:
            slices.check(inner, within=outer)
        assert str(e.value) == (f"{inner} SMs inside a slice of {outer}: a slice inside a slice is cut from the SMs "
                                f"of the one it is in, so it holds {outer} at most")
    assert slices.check(inner) == inner             # alone, each is an allowed count of the H200


def test_a_count_the_gpu_cannot_make_is_refused_for_that_before_the_outer_slices_bound():
    with pytest.raises(slices.SliceError, match="a multiple of 8 SMs"):
        slices.check(12, within=16)


def _entered(n: int) -> slices.SMSlice:
    """A green slice as __enter__ leaves it (without a GPU: its green context stands in as an object)."""
    from launchlab.core import hardware
    s = slices.SMSlice(n, granularity=slices.H200, _green=object())
    slices._active.append(s)
    hardware._slices.append((n, 132))
    return s


def _left(s: slices.SMSlice) -> None:
    from launchlab.core import hardware
    slices._active.remove(s)
    hardware._slices.remove((s.n, 132))


def test_inside_a_slice_inside_a_slice_every_reader_sees_the_inner_one_until_it_is_left():
    from launchlab.core import hardware, occupancy
    outer = _entered(32)
    try:
        inner = _entered(8)
        try:
            assert slices.active() is inner and slices.green() is inner
            assert slices.note() == "on 8 of the GPU's 132 SMs (a green context)"
            assert hardware.spec("H200").sm_count == 8
            assert occupancy.occupancy(256, 32, 0).blocks_per_wave == 8 * 8        # 8 blocks of 256 per SM
        finally:
            _left(inner)
        assert slices.active() is outer and slices.note() == "on 32 of the GPU's 132 SMs (a green context)"
        assert hardware.spec("H200").sm_count == 32
    finally:
        _left(outer)
    assert slices.active() is None and slices.note() == "" and hardware.spec("H200").sm_count == 132


@pytest.mark.gpu
def test_a_slice_inside_a_slice_runs_on_the_outer_ones_sms():
    """16 SMs, then 8 of them: the inner launch's stamps are 8 distinct SMs, all among the outer launch's 16."""
    with slices.SMSlice(16) as outer:
        ran_outer = set(_stamped_waves(528).sm)
        assert outer.prove(ran_outer) == 16
        with slices.SMSlice(8) as inner:
            ran_inner = set(_stamped_waves(528).sm)
            assert inner.prove(ran_inner) == 8 and ran_inner <= ran_outer
        with pytest.raises(slices.SliceError, match="inside a slice of 16"):
            with slices.SMSlice(32):
                pass
        assert slices.active() is outer
    assert slices.active() is None
