"""On a GPU: the explorers of the section decks (issue 28) relaunch the kernel when a control moves.

The browser run (tests/browser/run_browser.py) moves every explorer on its slide in replay, where a move reads
the H200 recording. Here, live, each explorer class that a deck shows is built the way its notebook builds it
(the recorded sweep as its backdrop, as in the replay notebooks) and its first control is moved the way a slider
drag sets it; the course's launch path (`loader.Kernel.launch`, the one every kernel of the course goes through,
checked geometry included) counts the launches the move makes. A move must change the explorer's text, say it
was measured now, and launch at least one kernel -- except the occupancy calculator, which is arithmetic by
design and must launch none.
"""
import time

import pytest

from launchlab.core import loader, mode
from launchlab.faces import presenter

pytestmark = pytest.mark.gpu


def _build(name: str):
    """Each deck explorer as its notebook makes it (the notebooks pass the section door's data; tests/
    test_presenter.py checks that BUILT is every explorer class the decks show)."""
    if name in ("BandwidthExplorer", "WaveExplorer", "OccupancyExplorer"):
        from launchlab.sections.s01_arithmetic import bandwidth, explorers, staircases
        return {"BandwidthExplorer": lambda: explorers.BandwidthExplorer(bandwidth.DOOR.recorded()),
                "WaveExplorer": lambda: explorers.WaveExplorer(staircases.DOOR.recorded()),
                "OccupancyExplorer": lambda: explorers.OccupancyExplorer()}[name]()
    if name == "SliceWaveExplorer":
        from launchlab.sections.s01_arithmetic import explorers, smaller_gpus
        return explorers.SliceWaveExplorer(smaller_gpus.DOOR.recorded())
    if name == "SliceStarvationExplorer":
        from launchlab.sections.s03_starvation import smaller_gpus
        from launchlab.sections.s05_sharding import explorers
        return explorers.SliceStarvationExplorer(smaller_gpus.DOOR.recorded())
    if name == "RMSExplorer":
        from launchlab.sections.s02_width import explorers, rmsnorm
        return explorers.RMSExplorer(rmsnorm.DOOR.recorded())
    if name == "KDAExplorer":
        from launchlab.sections.s03_starvation import explorers, kda
        return explorers.KDAExplorer(kda.DOOR.recorded())
    if name == "MLAExplorer":
        from launchlab.sections.s04_derive import derive, explorers
        return explorers.MLAExplorer(derive.DOOR.recorded())
    if name == "SplitExplorer":
        from launchlab.sections.s08_reshape import reassociation
        from launchlab.sections.s08_reshape.explorers import SplitExplorer
        return SplitExplorer(reassociation.DOOR.recorded())
    raise KeyError(name)


BUILT = ("BandwidthExplorer", "WaveExplorer", "OccupancyExplorer", "RMSExplorer", "KDAExplorer", "MLAExplorer",
         "SplitExplorer", "SliceStarvationExplorer", "SliceWaveExplorer")
ARITHMETIC = {"OccupancyExplorer"}          # the calculator: no kernel behind it, in either mode


def _move(ctrl) -> None:
    """Set the control to another value, as a drag or a pick would."""
    opts = getattr(ctrl, "options", None)
    if opts:
        values = [o[1] if isinstance(o, tuple) else o for o in opts]
        i = values.index(ctrl.value)
        ctrl.value = values[i - 1] if i + 1 == len(values) else values[i + 1]
    else:
        step = getattr(ctrl, "step", 1) or 1
        ctrl.value = ctrl.value + step if ctrl.value + step <= ctrl.max else ctrl.value - step


@pytest.mark.parametrize("name", BUILT)
def test_moving_a_deck_explorer_relaunches_the_kernel(name, monkeypatch, record_property):
    assert mode.is_live()
    launches = []
    real = loader.Kernel.launch

    def counted(self, *a, **k):
        launches.append(self.expr)
        return real(self, *a, **k)
    monkeypatch.setattr(loader.Kernel, "launch", counted)
    ex = _build(name)
    ex.widget()
    before, launches_at_start = ex.shown, len(launches)
    ctrl = ex._controls[0]
    t0 = time.perf_counter()
    _move(ctrl)
    seconds = time.perf_counter() - t0
    made = launches[launches_at_start:]
    record_property("launches", len(made))
    print(f"{name}: {ctrl.description} -> {ctrl.value}: {len(made)} launch(es) of {sorted(set(made))} in "
          f"{seconds:.2f} s; now: {ex.shown.splitlines()[0][:150]}")
    assert ex.shown != before
    if name in ARITHMETIC:
        assert made == []
    else:
        assert made, f"{name}: the move launched nothing"
        assert "now" in ex.shown, ex.shown               # "measured now", "decoded now": not the recording
