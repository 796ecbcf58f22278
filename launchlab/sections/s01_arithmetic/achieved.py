"""Occupancy against grid size, measured: block timelines of real launches, beside the calculator and ncu.

The calculator (launchlab.core.occupancy) says how many warps *could* be resident per SM. A launch only fills that
if it has the blocks: with fewer blocks than SMs most SMs hold nothing, and past one wave blocks queue. This
module measures what a launch achieved, from its own block timeline (launchlab.core.timeline):

    stream      §1's streaming read (stream_read<4, 4>, block 256) at grids from 1 block to two waves
    kda         §3's decode step at 12 heads: main's kernel (12 blocks), the fix (48), the tuned kernel (48)
    waves       §1's fixed_work at one block per SM, one past a wave; and at two resident per SM

and cross-checks the achieved occupancy against Nsight Compute's (profile.ncu) on the same shapes. Live it
measures now (about a minute, most of it ncu); replay reads the `timeline` recording.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from launchlab.core import hardware, loader, occupancy, profile, recordings, timeline
from launchlab.core.door import Door
from launchlab.core.recordings import RECORDED
from launchlab.kernels import kda_decode, stream_read, waves

STREAM_BLOCK = 256
STREAM_GRIDS = (1, 12, 48, 132, 264, 528, 1056, 1057, 2112)
STREAM_BYTES = 256 << 20
KDA_ARMS = (("main", "walk", kda_decode.V, "store"), ("fix", "walk", kda_decode.BV_TILED, "rn"), ("tuned", "tuned", kda_decode.BV_TILED, "rn"))
WAVE_CASES = (("one past a wave, 1 block/SM", 1, 133), ("two waves, 1 block/SM", 1, 264),
              ("two resident per SM", 2, 264))


@dataclass
class Case:
    """One launch seen through its block timeline, with what the calculator says it could hold."""
    name: str
    kernel: str                 # the default instantiation it stands for (the stamped twin ran)
    grid: int
    block: int
    blocks_per_sm: int          # the calculator, with the default instantiation's registers and shared memory
    theoretical_pct: float
    timeline: timeline.Timeline

    @property
    def achieved_pct(self) -> float:
        return self.timeline.achieved_pct()

    @property
    def sms_with_work(self) -> int:
        return self.timeline.sms_with_work


@dataclass
class NcuReading:
    """ncu's occupancy of the same shape (the default instantiation, profiled in a child process)."""
    case: str
    kernel: str
    grid: int
    block: int
    achieved_pct: float
    theoretical_pct: float
    limits: dict[str, float]


@dataclass
class AchievedData:
    tick_ns: float              # %globaltimer's update interval on the recording GPU (median gap)
    tick_min_ns: int
    stream: list[Case]
    kda: list[Case]
    waves: list[Case]
    ncu: list[NcuReading]
    ncu_error: str | None = None
    source: str = field(default="", metadata={RECORDED: False})

    def case(self, name: str) -> Case:
        for c in self.stream + self.kda + self.waves:
            if c.name == name:
                return c
        raise KeyError(f"no case {name!r}")

    def ncu_for(self, name: str) -> NcuReading | None:
        return next((r for r in self.ncu if r.case == name), None)

    def vs_ncu(self) -> list[tuple[Case, NcuReading]]:
        return [(c, r) for c in self.stream + self.kda if (r := self.ncu_for(c.name)) is not None]

    def max_abs_vs_ncu(self) -> float:
        """The largest disagreement, in percentage points, between timeline and ncu achieved occupancy."""
        pairs = self.vs_ncu()
        return max(abs(c.achieved_pct - r.achieved_pct) for c, r in pairs) if pairs else float("nan")


def stream_name(grid: int) -> str:
    return f"stream_read grid {grid}"


# ------------------------------------------------------------------ live
def _theory(family: str, expr: str, block: int, smem: int = 0) -> tuple[int, float]:
    regs, static = loader.resources(family, expr)
    o = occupancy.occupancy(block, regs, static + smem, hardware.from_device())
    return o.blocks_per_sm, 100 * o.fraction


def stream_cases() -> list[Case]:
    sr = stream_read.StreamRead(STREAM_BYTES)
    k = loader.kernel(stream_read.FAMILY, "stream_read_timeline<4, 4>")
    n_vec = np.int64(sr.x.size // 4)
    bps, th = _theory(stream_read.FAMILY, "stream_read<4, 4>", STREAM_BLOCK)
    out = []
    for g in STREAM_GRIDS:
        sr.launch(g, STREAM_BLOCK)                                        # warm: the same shape, unstamped
        t = timeline.capture(stream_read.FAMILY, lambda g=g: k.launch(g, STREAM_BLOCK, (sr.x, n_vec, sr.partial)),
                             g, STREAM_BLOCK, stream_name(g))
        out.append(Case(stream_name(g), "stream_read<4, 4>", g, STREAM_BLOCK, bps, th, t))
    return out


def kda_cases(n_head: int = 12) -> list[Case]:
    b = kda_decode.Bench(n_head)
    out = []
    for name, body, bv, m in KDA_ARMS:
        p = kda_decode.plan(n_head, kda_decode.V, bv, m, body)
        b.run(bv, m, body)
        bps, th = _theory(kda_decode.FAMILY, p.expr, p.block)
        t = timeline.capture(kda_decode.FAMILY, lambda: kda_decode.step(b.q, b.k, b.vv, b.g, b.beta, b.state, b.o, b.scratch, bv,
                                                          m, body, timeline=True), p.blocks, p.block, name)
        out.append(Case(name, p.expr, p.blocks, p.block, bps, th, t))
    return out


def wave_cases() -> list[Case]:
    w = waves.WaveKernels()
    out = []
    for name, residency, grid in WAVE_CASES:
        w.launch_work(grid, residency)
        smem = waves.residency_smem(residency, waves.BLOCK, w.work.registers, w.spec)
        bps, th = _theory(waves.FAMILY, "fixed_work", waves.BLOCK, smem)
        t = timeline.capture(waves.FAMILY, lambda: w.launch_work(grid, residency, timeline=True), grid, waves.BLOCK,
                             name)
        out.append(Case(name, "fixed_work", grid, waves.BLOCK, bps, th, t))
    return out


def ncu_launches() -> None:
    """What the ncu child runs: each stream and KDA case once, default instantiations, in case order."""
    sr = stream_read.StreamRead(STREAM_BYTES)
    for g in STREAM_GRIDS:
        sr.launch(g, STREAM_BLOCK)
    b = kda_decode.Bench(12)
    for _, body, bv, m in KDA_ARMS:
        b.run(bv, m, body)
    import cupy
    cupy.cuda.Device().synchronize()


def ncu_readings() -> list[NcuReading]:
    names = [stream_name(g) for g in STREAM_GRIDS] + [a[0] for a in KDA_ARMS]
    rows = profile.ncu("from launchlab.sections.s01_arithmetic import achieved; achieved.ncu_launches()", r"stream_read|kda_")
    if len(rows) != len(names):
        raise profile.ProfileError(f"ncu profiled {len(rows)} launches, expected {len(names)}")
    out = []
    for name, r in zip(names, rows):
        limits = {k.split("limit_")[1]: v for k, v in r.metrics.items() if "occupancy_limit" in k}
        out.append(NcuReading(name, r.kernel, r.grid, r.block, r.achieved_pct, r.theoretical_pct, limits))
    return out


def measure() -> AchievedData:
    res = timeline.resolution()
    s, k, w = stream_cases(), kda_cases(), wave_cases()
    try:
        readings, err = ncu_readings(), None
    except (profile.ProfileError, OSError, ValueError) as e:
        readings, err = [], f"{type(e).__name__}: {e}"
    return AchievedData(res.tick_ns, res.min_ns, s, k, w, readings, err, "live")


def _parse(d: dict, source: str) -> AchievedData:
    r = recordings.decode(AchievedData, d, "timeline")
    r.source = source
    return r


DOOR: Door[AchievedData] = Door("block timelines and achieved occupancy", "timeline",
                                (stream_read.FAMILY, kda_decode.FAMILY, waves.FAMILY, timeline.FAMILY, "spin"), measure,
                                _parse, recordings.encode)
data = DOOR.data
recorded = DOOR.recorded


def headline(d: AchievedData) -> dict:
    out = {"achieved_occupancy_vs_ncu_max_abs_pct": d.max_abs_vs_ncu(),
           "globaltimer_tick_ns": d.tick_ns,
           "stream_achieved_pct_grid12": d.case(stream_name(12)).achieved_pct,
           "stream_achieved_pct_grid1056": d.case(stream_name(1056)).achieved_pct,
           "kda_main_sms_with_work": d.case("main").sms_with_work}
    return out
