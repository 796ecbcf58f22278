"""§1 on smaller GPUs (issue 29): the wave staircase measured inside slices of N SMs of the H200.

A wave is SMs x resident blocks per SM, so the staircase's step moves with the machine. Inside a slice
(launchlab.core.slices: a green context of N SMs) fixed_work is timed at 1 block per SM over three waves of
grids, and the stamped twin is launched at the grids around the step (W, W + 1 and 2W + 1, W = the calculator's
wave at N) so that the %smid stamps say how many SMs the blocks ran on and how many waves they formed. Each
launch's stamps are proved against the slice (at most N distinct SMs) or the measurement is refused.

Where the step falls is read from the measured times (`staircases.find_steps`), not from the calculator; the
calculator's W is kept beside it so the two can be compared.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from launchlab.core import hardware, occupancy, recordings, slices, timeline, timing
from launchlab.core.door import Door
from launchlab.core.progress import Progress
from launchlab.core.recordings import RECORDED
from launchlab.kernels import waves
from launchlab.sections.s01_arithmetic import staircases

SMS = (16, 32, 64, 128, 132)       # four green slices and the whole H200 (132 is its ordinary context)
RESIDENCY = 1                      # blocks per SM: the wave is N blocks


@dataclass
class Stamps:
    """One stamped launch inside the slice: how many SMs its blocks ran on and how many waves they formed."""
    grid: int
    distinct_sms: int
    waves: int
    span_us: float


@dataclass
class SliceStaircase:
    sms: int                       # N: the SMs the slice holds
    slice: str                     # the slice in words (green context, or the whole GPU)
    blocks_per_wave: int           # the calculator at N SMs (hardware inside the slice reads N)
    grids: list[int]
    timings: list[timing.Timing]   # hot: the kernel touches no memory worth caching
    stamps: list[Stamps]

    @property
    def medians(self) -> list[float]:
        return [t.median for t in self.timings]

    def steps(self) -> list[tuple[int, int]]:
        return staircases.find_steps(self.grids, self.medians)

    def step_blocks(self) -> int | None:
        """The largest grid that still ran in one wave, read from the measured times: the first step falls
        one block after it."""
        s = self.steps()
        return s[0][0] if s else None

    def respected(self) -> bool:
        return all(s.distinct_sms <= self.sms for s in self.stamps)


@dataclass
class SlicedWaves:
    residency: int
    staircases: list[SliceStaircase]
    source: str = field(default="", metadata={RECORDED: False})

    def at(self, sms: int) -> SliceStaircase:
        for s in self.staircases:
            if s.sms == sms:
                return s
        raise KeyError(f"no staircase measured on {sms} SMs; measured: {[s.sms for s in self.staircases]}")

    @property
    def sm_counts(self) -> list[int]:
        return [s.sms for s in self.staircases]


def _stamped(w: waves.WaveKernels, grid: int, s: slices.SMSlice) -> Stamps:  # pragma: no mutate block (live only)
    t = timeline.capture(waves.FAMILY, lambda: w.launch_work(grid, RESIDENCY, timeline=True), grid, waves.BLOCK,
                         f"fixed_work grid {grid} on {s.n} SMs")
    return Stamps(grid, s.prove(t.sm), len(t.waves()), t.span_ns / 1e3)


def on_slice(w: waves.WaveKernels, n: int, reps: int = 10, waves_: int = 3) -> SliceStaircase:  # pragma: no mutate block (live only)
    """The staircase inside a slice of n SMs."""
    with slices.SMSlice(n) as s:
        spec = hardware.from_device()
        smem = waves.residency_smem(RESIDENCY, waves.BLOCK, w.work.registers, w.spec)
        W = occupancy.occupancy(waves.BLOCK, w.work.registers, smem + w.work.smem_static, spec).blocks_per_wave
        grids = staircases.grids_for(W, waves_)
        ts = [timing.events(lambda g=g: w.launch_work(g, RESIDENCY), reps=reps, warmup=2) for g in grids]
        stamps = [_stamped(w, g, s) for g in (W, W + 1, 2 * W + 1)]
        return SliceStaircase(s.n, s.describe(), W, grids, ts, stamps)


def measure(sms: tuple[int, ...] = SMS, reps: int = 10) -> SlicedWaves:  # pragma: no mutate block (live only)
    w = waves.WaveKernels()
    w.launch_work(1, RESIDENCY)                    # load and warm outside the slices
    prog = Progress("staircase on N SMs")
    out = []
    for i, n in enumerate(sms):
        out.append(on_slice(w, n, reps))
        prog(i + 1, len(sms))
    return SlicedWaves(RESIDENCY, out, "live")


_parse, _dump = recordings.codec(SlicedWaves, "waves", "slices")
DOOR: Door[SlicedWaves] = Door("wave staircase on N SMs", "slices", (waves.FAMILY, "spin"), measure,
                               _parse, _dump, quick={"reps": 5}, replayed_live=True)
data = DOOR.data
recorded = DOOR.recorded

_kernels: list = []


def point(sms: int, grid: int, reps: int = 5) -> tuple[timing.Timing, str]:
    """One grid of the staircase on `sms` SMs, for the explorer: relaunched now inside a slice of that many SMs
    (live), or the recorded point (replay)."""
    def now():  # pragma: no mutate block (live only)
        if not _kernels:
            _kernels.append(waves.WaveKernels())
        w = _kernels[0]
        with slices.SMSlice(sms):
            return timing.events(lambda: w.launch_work(grid, RESIDENCY), reps=reps), f"measured now on {sms} SMs"

    def recorded_point():
        s = data().at(sms)
        if grid not in s.grids:
            raise KeyError(f"grid {grid} was not recorded on {sms} SMs; recorded: {s.grids}")
        return s.timings[s.grids.index(grid)], f"recorded on {sms} SMs"
    return DOOR.choose(live=now, replay=recorded_point)


def headline(d: SlicedWaves) -> dict:
    out = {f"wave_step_blocks_{s.sms}sm": s.step_blocks() for s in d.staircases}
    out.update({f"wave_calculator_blocks_{s.sms}sm": s.blocks_per_wave for s in d.staircases})
    out["wave_slices_respected"] = all(s.respected() for s in d.staircases)
    return out
