"""§1 streaming reads: achieved bandwidth against grid and block size, and why bytes in flight decide it.

A memory-bound kernel gets bandwidth = bytes in flight / memory latency (Little's law) until the memory
system saturates. Bytes in flight are set by what is resident and outstanding:

    resident blocks = min(grid, SMs * blocks per SM)
    bytes in flight = resident blocks * threads per block * (bytes per load) * (loads in flight per thread)

so a launch of 12 blocks of 1024 threads and one of 48 blocks of 256 threads have the same bytes in flight
and about the same bandwidth: saturation follows bytes in flight, not block count.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from launchlab.core import loader, occupancy, recordings, timing
from launchlab.core.door import Door
from launchlab.core.progress import Progress
from launchlab.core.recordings import RECORDED
from launchlab.kernels.stream_read import BUFFER_BYTES, FAMILY, STATIC_SMEM, VARIANTS, StreamRead, expr, tb_per_s

BLOCKS = (128, 256, 512, 1024)
GRIDS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 132, 192, 256, 264, 384, 512, 528, 768, 1024,
         1056, 1584, 2048, 4096)


def bytes_in_flight(grid: int, block: int, vec: int = 4, unroll: int = 4, regs: int = 32,
                    gpu="H200") -> int:
    """Bytes the resident threads of this launch can have outstanding at once."""
    occ = occupancy.occupancy(block, regs, STATIC_SMEM, gpu)
    resident = min(grid, occ.blocks_per_wave)
    return resident * block * vec * 4 * unroll


@dataclass
class Point:
    grid: int
    block: int
    timing: timing.Timing
    nbytes: int
    vec: int = 4
    unroll: int = 4

    @property
    def tbs(self) -> float:
        return tb_per_s(self.nbytes, self.timing.median)


@dataclass
class Sweep:
    """§1's result: bandwidth against grid for several block sizes (and variants), plus the copy ceiling and
    the kernel's check against its numpy reference."""
    copy: timing.Timing
    copy_bytes: int
    regs: dict[str, int]    # {expr: registers per thread} of the kernels that ran
    points: list[Point]
    references: dict[str, float] = field(default_factory=dict, metadata={RECORDED: False})
    source: str = field(default="", metadata={RECORDED: False})   # "live" or the recording's provenance

    @property
    def copy_tbs(self) -> float:
        """The copy ceiling in TB/s, counting bytes read plus bytes written."""
        return tb_per_s(2 * self.copy_bytes, self.copy.median)

    def select(self, block=None, vec=4, unroll=4) -> list[Point]:
        return sorted((p for p in self.points if (block is None or p.block == block)
                       and p.vec == vec and p.unroll == unroll), key=lambda p: (p.block, p.grid))

    def at(self, grid: int, block: int, vec=4, unroll=4) -> Point:
        for p in self.points:
            if (p.grid, p.block, p.vec, p.unroll) == (grid, block, vec, unroll):
                return p
        raise KeyError(f"no recorded point at grid {grid}, block {block} (vec {vec}, unroll {unroll})")

    def peak(self) -> Point:
        return max(self.select(), key=lambda p: p.tbs)

    def in_flight(self, p: Point, gpu="H200") -> int:
        return bytes_in_flight(p.grid, p.block, p.vec, p.unroll, self.regs.get(expr(p.vec, p.unroll), 32), gpu)


@dataclass
class Ceiling:
    """The device-to-device copy: the practical bandwidth ceiling, counting bytes read plus written."""
    copy: timing.Timing
    copy_bytes: int
    source: str = ""

    @property
    def tbs(self) -> float:
        return tb_per_s(2 * self.copy_bytes, self.copy.median)


def measure_sweep(blocks=BLOCKS, grids=GRIDS, variants=((4, 4),), variant_block=256, reps: int = 7,
                  progress=None, nbytes: int = BUFFER_BYTES) -> Sweep:
    """Measure a sweep now (live). `variants` other than (4, 4) are swept at `variant_block` only."""
    sr = StreamRead(nbytes)
    jobs = [(g, b, 4, 4) for b in blocks for g in grids]
    jobs += [(g, variant_block, v, u) for (v, u) in variants if (v, u) != (4, 4) for g in grids]
    pts = []
    for i, (g, b, v, u) in enumerate(jobs):
        pts.append(Point(g, b, sr.time(g, b, reps, v, u), sr.nbytes, v, u))
        if progress:
            progress(i + 1, len(jobs))
    regs = {expr(v, u): loader.kernel(FAMILY, expr(v, u)).registers for v, u in {(4, 4), *variants}}
    return Sweep(sr.copy_ceiling(), sr.nbytes, regs, pts, source="live")


def measure(reps: int = 7) -> Sweep:
    """§1 now: every block size and grid at the default arm, every gate arm at block 256, the copy ceiling,
    and every arm against its numpy reference at two shapes (`reps` graph replays per point: 7 recorded, 3 in
    the course's quick live run)."""
    s = measure_sweep(variants=VARIANTS, reps=reps, progress=Progress("stream sweep"))
    sr = StreamRead()
    s.references = {f"{v}x{u}": sr.check_reference(g, b, v, u)
                    for (v, u) in VARIANTS for (g, b) in ((1, 128), (37, 256))}
    return s


def _parse(d: dict, source: str) -> Sweep:
    s = recordings.decode(Sweep, d["stream"], "section01.stream")
    s.references, s.source = dict(d["stream_reference_max_rel_err"]), source
    return s


def _dump(s: Sweep) -> dict:
    return {"stream": recordings.encode(s), "stream_reference_max_rel_err": s.references}


DOOR: Door[Sweep] = Door("streaming read sweep", "section01", (FAMILY, "spin"), measure, _parse, _dump,
                         quick={"reps": 3})
data = DOOR.data
recorded = DOOR.recorded


def _measure_ceiling() -> Ceiling:
    sr = StreamRead()
    return Ceiling(sr.copy_ceiling(), sr.nbytes, "live")


def _parse_ceiling(d: dict, source: str) -> Ceiling:
    s = _parse(d, source)
    return Ceiling(s.copy, s.copy_bytes, source)


CEILING: Door[Ceiling] = Door("copy ceiling", "section01", (FAMILY, "spin"), _measure_ceiling, _parse_ceiling,
                              dump=None)


def ceiling() -> Ceiling:
    """The copy ceiling alone (live: a few hundred ms of copies; replay: §1's recorded one), for the floors
    of other sections."""
    return CEILING.data()


_reader: list = []


def point(grid: int, block: int, reps: int = 5) -> tuple[Point, str]:
    """One point for the explorer: relaunched now (live) or the recorded one (replay)."""
    def now():
        if not _reader:
            _reader.append(StreamRead())
        sr = _reader[0]
        return Point(grid, block, sr.time(grid, block, reps), sr.nbytes), "measured now"
    return DOOR.choose(live=now, replay=lambda: (data().at(grid, block), "recorded"))


def latency_estimate_ns(sweep: Sweep, below: float = 0.3, gpu="H200") -> float:
    """Little's law on the unsaturated points: latency ~ bytes in flight / bandwidth (median, ns)."""
    vals = [sweep.in_flight(p, gpu) / (p.tbs * 1e12) * 1e9 for p in sweep.points
            if p.tbs < below * sweep.copy_tbs and p.grid >= 8]
    return float(np.median(vals))


def headline(s: Sweep) -> dict:
    pk = s.peak()
    return {"copy_ceiling_tbs": s.copy_tbs,
            "peak_read_tbs": pk.tbs,
            "peak_read_over_copy": pk.tbs / s.copy_tbs,
            "read_tbs_grid1_block1024": s.at(1, 1024).tbs,
            "read_tbs_grid12_block1024": s.at(12, 1024).tbs,
            "read_tbs_grid48_block256": s.at(48, 256).tbs,
            "read_tbs_grid132_block256": s.at(132, 256).tbs,
            "littles_law_latency_ns": latency_estimate_ns(s)}
