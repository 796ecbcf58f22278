"""§1 wave quantization: a grid runs in waves of (SMs x resident blocks per SM) blocks.

fixed_work gives every block the same latency-bound job and sets residency with dynamic shared memory, so
the launch time is a staircase: flat while the extra blocks still fit in the current wave, a full step
(another wave's worth of time) at every multiple of blocks_per_wave. One block past a wave costs a whole
wave.

fixed_bytes is the contrast: memory-bound blocks, many resident, sharing bandwidth. A late block finds the
memory system busy either way and finishing times spread, so the same staircase is washed into a ramp:
wave quantization hides in kernels that saturate bandwidth with many resident blocks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from launchlab.core import occupancy, recordings, timing
from launchlab.core.door import Door
from launchlab.core.progress import Progress
from launchlab.core.recordings import RECORDED
from launchlab.kernels.waves import BLOCK, BYTES_BLOCK, BYTES_PER_BLOCK, FAMILY, ITERS, WaveKernels, residency_smem

RESIDENCIES = (1, 2, 4)


def grids_for(blocks_per_wave: int, waves: int = 4, per_wave: int = 8) -> list[int]:
    """Grid sizes that sample every wave evenly and bracket every wave boundary (k*W and k*W + 1)."""
    W = blocks_per_wave
    g = {1, waves * W}
    g |= {max(1, W * i // per_wave) for i in range(1, waves * per_wave + 1)}
    g |= {k * W + 1 for k in range(1, waves)}
    return sorted(g)


def find_steps(grids, medians, jump: float = 0.25) -> list[tuple[int, int]]:
    """(last grid before, first grid after) for every rise of more than `jump` x the first wave's time."""
    pairs = sorted(zip(grids, medians))
    base = pairs[0][1]
    return [(g0, g1) for (g0, t0), (g1, t1) in zip(pairs, pairs[1:]) if t1 - t0 > jump * base]


def step_share(grids, medians, blocks_per_wave: int) -> float:
    """Share of the total rise in time that happens across wave boundaries (k*W -> k*W + 1).
    ~1 for a staircase (all the rise is at the boundaries), small for a ramp."""
    pairs = sorted(zip(grids, medians))
    total = pairs[-1][1] - pairs[0][1]
    at_edges = sum(t1 - t0 for (g0, t0), (g1, t1) in zip(pairs, pairs[1:])
                   if g1 == g0 + 1 and g0 % blocks_per_wave == 0)
    return at_edges / total if total > 0 else 0.0


def predicted_us(grid: int, blocks_per_wave: int, per_wave_us: float) -> float:
    return math.ceil(grid / blocks_per_wave) * per_wave_us


@dataclass
class Staircase:
    residency: int             # blocks per SM
    blocks_per_wave: int       # predicted: SMs * residency
    smem: int
    block: int
    grids: list[int]
    timings: list[timing.Timing]

    @property
    def medians(self) -> list[float]:
        return [t.median for t in self.timings]

    def steps(self) -> list[tuple[int, int]]:
        return find_steps(self.grids, self.medians)

    def observed_wave(self) -> int | None:
        """The largest grid that still ran in one wave (the grid just before the first step)."""
        s = self.steps()
        return s[0][0] if s else None

    def per_wave_us(self) -> float:
        one = [t for g, t in zip(self.grids, self.medians) if g <= self.blocks_per_wave]
        return float(np.median(one))

    def at(self, grid: int) -> timing.Timing:
        try:
            return self.timings[self.grids.index(grid)]
        except ValueError:
            raise KeyError(f"no recorded grid {grid} at {self.residency} block(s)/SM") from None


@dataclass
class Ramp:
    """fixed_bytes: time against grid for the memory-bound contrast."""
    block: int
    bytes_per_block: int
    blocks_per_wave: int
    grids: list[int]
    timings: list[timing.Timing]

    @property
    def medians(self) -> list[float]:
        return [t.median for t in self.timings]


@dataclass
class WaveData:
    """§1's wave result: one staircase per residency, the memory-bound ramp, and both kernels against numpy."""
    staircases: list[Staircase]
    ramp: Ramp
    iters: int
    reference_max_rel_err: dict[str, float]
    source: str = field(default="", metadata={RECORDED: False})

    def at(self, residency: int) -> Staircase:
        for s in self.staircases:
            if s.residency == residency:
                return s
        raise KeyError(f"no staircase at {residency} block(s)/SM")


# ------------------------------------------------------------------ the two measurements, on the wave kernels
def staircase(w: WaveKernels, residency: int, waves: int = 4, reps: int = 10, progress=None) -> Staircase:
    occ = occupancy.occupancy(BLOCK, w.work.registers,
                              residency_smem(residency, BLOCK, w.work.registers, w.spec)
                              + w.work.smem_static, w.spec)
    W = occ.blocks_per_wave
    grids = grids_for(W, waves)
    ts = []
    for i, g in enumerate(grids):
        ts.append(timing.events(lambda: w.launch_work(g, residency), reps=reps, warmup=2))
        if progress:
            progress(i + 1, len(grids))
    return Staircase(residency, W, residency_smem(residency, BLOCK, w.work.registers, w.spec),
                     BLOCK, grids, ts)


def ramp(w: WaveKernels, waves: int = 4, reps: int = 10) -> Ramp:
    occ = occupancy.occupancy(BYTES_BLOCK, w.bytes_k.registers, w.bytes_k.smem_static, w.spec)
    W = occ.blocks_per_wave
    grids = grids_for(W, waves)
    ts = [timing.events(lambda: w.launch_bytes(g), reps=reps, warmup=2) for g in grids]
    return Ramp(BYTES_BLOCK, BYTES_PER_BLOCK, W, grids, ts)


def measure() -> WaveData:
    w = WaveKernels()
    stairs = [staircase(w, r, progress=Progress(f"{r} block(s)/SM")) for r in RESIDENCIES]
    return WaveData(stairs, ramp(w), ITERS, w.check_references(), "live")


def _parse(d: dict, source: str) -> WaveData:
    r = recordings.decode(WaveData, d["waves"], "section01.waves")
    r.source = source
    return r


DOOR: Door[WaveData] = Door("wave staircases", "section01", (FAMILY, "spin"), measure, _parse,
                            lambda r: {"waves": recordings.encode(r)})
data = DOOR.data
recorded = DOOR.recorded

_kernels: list = []


def point(residency: int, grid: int, reps: int = 5) -> tuple[timing.Timing, str]:
    """One grid of one staircase for the explorer: relaunched now (live) or recorded (replay)."""
    def now():
        if not _kernels:
            _kernels.append(WaveKernels())
        w = _kernels[0]
        return timing.events(lambda: w.launch_work(grid, residency), reps=reps), "measured now"
    return DOOR.choose(live=now, replay=lambda: (data().at(residency).at(grid), "recorded"))


def headline(d: WaveData) -> dict:
    out = {}
    for s in d.staircases:
        out[f"wave_blocks_per_wave_{s.residency}per_sm"] = s.blocks_per_wave
        out[f"wave_observed_one_wave_grid_{s.residency}per_sm"] = s.observed_wave()
        out[f"wave_us_per_wave_{s.residency}per_sm"] = s.per_wave_us()
        out[f"wave_step_share_{s.residency}per_sm"] = step_share(s.grids, s.medians, s.blocks_per_wave)
    out["ramp_step_share"] = step_share(d.ramp.grids, d.ramp.medians, d.ramp.blocks_per_wave)
    return out
