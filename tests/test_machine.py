"""Live on the GPUs learners have (issue 29): only an H200 is here, so the other GPUs' live paths are run against
their hardware descriptions (hardware.LEARNER_GPUS): the label every figure gets, the H200's recording drawn
beside a live figure, PDL's fallback, and what the calculator, the waves and the geometry say on each."""
import matplotlib
import matplotlib.pyplot as plt
import pytest

from launchlab.core import hardware, machine, mode, occupancy, pdl
from launchlab.kernels import kda_decode
from launchlab.sections.s01_arithmetic import figures as f01, staircases

GPUS = sorted(hardware.LEARNER_GPUS)


@pytest.fixture
def on(monkeypatch):
    """Pretend the live GPU is `name` (its hardware description): machine.other() answers with it."""
    shown = []

    def use(name):
        s = hardware.LEARNER_GPUS[name]
        monkeypatch.setattr(machine, "other", lambda: s)
        monkeypatch.setattr(machine, "_display", shown.append)
        monkeypatch.setitem(matplotlib.rcParams, "figure.hooks", [machine.HOOK])
        return s
    use.shown = shown
    yield use
    plt.close("all")


def test_the_h200_is_the_recorded_machine_and_nothing_else_is():
    assert machine.is_recorded_machine(hardware.H200)
    assert not machine.is_recorded_machine(hardware.sliced("H200", 16))
    assert not any(machine.is_recorded_machine(s) for s in hardware.LEARNER_GPUS.values())


@pytest.mark.skipif(mode.is_live(), reason="replay only (on the H200 live, other() is None too: test below)")
def test_in_replay_nothing_is_labelled_or_drawn_twice():
    assert machine.other() is None and machine.install() == ""
    fig = plt.figure()
    machine.figure_hook(fig)
    assert fig.texts == []
    plt.close(fig)


@pytest.mark.parametrize("name", GPUS)
def test_every_figure_is_labelled_with_the_gpu_it_ran_on(on, name):
    s = on(name)
    fig = f01.occupancy_vs_block(32, 0, s)
    labels = [t.get_text() for t in fig.texts]
    cc = f"sm_{s.compute_capability[0]}{s.compute_capability[1]}"
    assert f"measured live on {s.name} ({s.sm_count} SMs, {cc}); not the H200" in " ".join(labels)


def test_a_figure_of_a_live_result_is_preceded_by_the_h200s_recording(on):
    on("A100")
    live = staircases.recorded()
    live._door = staircases.DOOR                      # what Door.data() marks a live result with
    wrapped = machine.beside(f01.staircases)
    fig = wrapped(live.staircases, live.ramp)
    assert fig is not None and on.shown == []         # the list of staircases is not itself a door's result
    fig = machine.beside(f01.bandwidth_vs_grid)(_marked_sweep())
    assert len(on.shown) == 1 and "the H200's recording" in on.shown[0]._suptitle.get_text()
    with machine.alone():                             # an explorer's redraw
        machine.beside(f01.bandwidth_vs_grid)(_marked_sweep())
    assert len(on.shown) == 1


def _marked_sweep():
    from launchlab.sections.s01_arithmetic import bandwidth
    s = bandwidth.recorded()
    s._door = bandwidth.DOOR
    return s


def test_install_wraps_every_sections_figures_once(on):
    on("L4")
    from launchlab import sections
    line = machine.install([sec.figures for sec in sections.all() if sec.figures is not None])
    assert "NVIDIA L4 (58 SMs, sm_89)" in line and machine.HOOK in matplotlib.rcParams["figure.hooks"]
    assert getattr(f01.staircases_on_slices, "_beside", False)
    assert machine.beside(f01.staircases_on_slices) is f01.staircases_on_slices


@pytest.mark.parametrize("name", GPUS)
def test_pdl_runs_on_hopper_and_later_and_says_so_elsewhere(name):
    s = hardware.LEARNER_GPUS[name]
    assert pdl.supported(s.compute_capability) == (s.compute_capability >= (9, 0))
    note = pdl.note(s.compute_capability)
    assert (note == "") == pdl.supported(s.compute_capability)
    if note:
        assert "compiled out" in note and "plain launches" in note


@pytest.mark.parametrize("name", GPUS)
def test_the_calculator_waves_and_geometry_on_each_gpu(name):
    s = hardware.LEARNER_GPUS[name]
    o = occupancy.occupancy(256, 32, 0, s)
    per_sm = min(s.max_threads_per_sm // 256, s.max_blocks_per_sm)
    assert o.blocks_per_sm == per_sm and o.blocks_per_wave == per_sm * s.sm_count
    grids = staircases.grids_for(o.blocks_per_wave)
    assert o.blocks_per_wave in grids and o.blocks_per_wave + 1 in grids
    g = kda_decode.geometry(12, kda_decode.V, "store", "walk", s)
    assert g.sm_count == s.sm_count and g.share_sms == pytest.approx(12 / s.sm_count)


@pytest.mark.gpu
def test_on_the_h200_live_nothing_changes():
    assert machine.is_recorded_machine(hardware._properties(0)) and machine.other() is None and machine.install() == ""
    assert pdl.supported()
