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

from . import gates, hardware, kernels, launch, mode, occupancy, recordings, timing
from . import timeline as timeline_mod
from .door import Door
from .progress import Progress
from .recordings import RECORDED

FAMILY = "stream_read"
BUFFER_BYTES = 1 << 30                        # 1 GiB: 17x the H200's 60 MiB L2
BLOCKS = (128, 256, 512, 1024)
GRIDS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 132, 192, 256, 264, 384, 512, 528, 768, 1024,
         1056, 1584, 2048, 4096)
MAX_GRID = 65536
STATIC_SMEM = 128                             # the kernel's 32-float shm for block_sum
VARIANTS = ((4, 4), (1, 1), (4, 1), (1, 4))   # (floats per load, loads in flight): default first


def expr(vec: int, unroll: int) -> str:
    return f"stream_read<{vec}, {unroll}>"


def variant() -> tuple[int, int]:
    """(floats per load, loads in flight per thread) chosen by LAUNCHLAB_STREAM_VEC / _UNROLL now."""
    return int(gates.value("STREAM_VEC")), int(gates.value("STREAM_UNROLL"))


def bytes_in_flight(grid: int, block: int, vec: int = 4, unroll: int = 4, regs: int = 32,
                    gpu="H200") -> int:
    """Bytes the resident threads of this launch can have outstanding at once."""
    occ = occupancy.occupancy(block, regs, STATIC_SMEM, gpu)
    resident = min(grid, occ.blocks_per_wave)
    return resident * block * vec * 4 * unroll


def check_view(x, vec: int) -> None:
    """float4 loads need a 16-byte aligned pointer and a length divisible by 4: refuse otherwise."""
    if x.dtype != np.float32:
        raise launch.LaunchError(f"the streaming read takes float32, got {x.dtype}")
    if x.ndim != 1 or (hasattr(x, "flags") and not x.flags.c_contiguous):
        raise launch.LaunchError("the streaming read takes a contiguous 1-D array")
    if x.size == 0:
        raise launch.LaunchError("the streaming read needs a non-empty array")
    if vec == 4:
        if not launch.aligned16(x):
            raise launch.LaunchError(f"misaligned view: float4 loads need a 16-byte aligned pointer, this one "
                                     f"is {launch.address(x) % 16} bytes past a 16-byte boundary "
                                     f"(use LAUNCHLAB_STREAM_VEC=1 or an aligned slice)")
        if x.size % 4:
            raise launch.LaunchError(f"float4 loads need a length divisible by 4, got {x.size} floats "
                                     f"(use LAUNCHLAB_STREAM_VEC=1)")


def reference_partials(x: np.ndarray, grid: int, block: int, vec: int) -> np.ndarray:
    """numpy reference: the sum each block owns under the grid-stride loop (float64)."""
    xv = np.asarray(x, dtype=np.float64).reshape(-1, vec).sum(axis=1)
    stride = grid * block
    pad = (-xv.size) % stride
    xv = np.concatenate([xv, np.zeros(pad)])
    return xv.reshape(-1, grid, block).sum(axis=(0, 2))


def tb_per_s(nbytes: int, us: float) -> float:
    return nbytes / (us * 1e-6) / 1e12


class StreamRead:
    """The §1 streaming read on a live GPU: one buffer, one build, any grid and block."""

    def __init__(self, nbytes: int = BUFFER_BYTES, seed: int = 0):
        mode.require_live("the streaming read")
        import cupy as cp

        self.cp = cp
        n = nbytes // 4
        self.x = cp.random.default_rng(seed).random(n, dtype=cp.float32)
        self.partial = cp.empty(MAX_GRID, dtype=cp.float32)
        self.spec = hardware.from_device()

    @property
    def nbytes(self) -> int:
        return self.x.nbytes

    def launch(self, grid: int, block: int, x=None, vec: int | None = None, unroll: int | None = None,
               timeline: bool | None = None):
        """One launch. timeline=True (or LAUNCHLAB_TIMELINE=1) runs the twin that stamps each block's SM and
        lifetime; it exists for float4 x 4 only, and needs timeline.capture() around it."""
        v, u = variant()
        vec, unroll = vec or v, unroll or u
        x = self.x if x is None else x
        check_view(x, vec)
        if grid > MAX_GRID:
            raise launch.LaunchError(f"grid {grid} exceeds this experiment's partial buffer ({MAX_GRID})")
        name = expr(vec, unroll)
        if timeline_mod.stamped(FAMILY, timeline):
            if (vec, unroll) != (4, 4):
                raise launch.LaunchError(f"the block-timeline twin is built for stream_read<4, 4> only, not {name}")
            name = "stream_read_timeline<4, 4>"
        k = kernels.kernel(FAMILY, name)
        k.launch(grid, block, (x, np.int64(x.size // vec), self.partial), spec=self.spec)
        return k

    def check_reference(self, grid: int, block: int, vec: int, unroll: int, n: int = 1 << 20) -> float:
        """Run on a small buffer and return the max relative error of the per-block sums vs numpy."""
        xs = self.x[:n]
        self.partial[:grid] = np.nan
        self.launch(grid, block, xs, vec, unroll)
        got = self.cp.asnumpy(self.partial[:grid]).astype(np.float64)
        ref = reference_partials(self.cp.asnumpy(xs), grid, block, vec)
        return float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)))

    def time(self, grid: int, block: int, reps: int = 7, vec=None, unroll=None, budget_s: float = 0.6
             ) -> timing.Timing:
        """Events around each launch; slow points (tiny grids) get fewer reps, never fewer than 3."""
        first = timing.events(lambda: self.launch(grid, block, vec=vec, unroll=unroll), reps=1, warmup=1)
        n = int(max(3, min(reps, budget_s / max(first.median * 1e-6, 1e-9))))
        t = timing.events(lambda: self.launch(grid, block, vec=vec, unroll=unroll), reps=n, warmup=1)
        return t

    def copy_ceiling(self, reps: int = 20) -> timing.Timing:
        """Device-to-device copy of the buffer (cudaMemcpyAsync): the practical ceiling, bytes read+written."""
        cp = self.cp
        dst = cp.empty_like(self.x)
        stream = cp.cuda.get_current_stream()

        def copy():
            cp.cuda.runtime.memcpyAsync(dst.data.ptr, self.x.data.ptr, self.x.nbytes, 3, stream.ptr)
        return timing.events(copy, reps=reps, warmup=3, label="cudaMemcpy D2D")


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
    regs = {expr(v, u): kernels.kernel(FAMILY, expr(v, u)).registers for v, u in {(4, 4), *variants}}
    return Sweep(sr.copy_ceiling(), sr.nbytes, regs, pts, source="live")


def measure() -> Sweep:
    """§1 now: every block size and grid at the default arm, every gate arm at block 256, the copy ceiling,
    and every arm against its numpy reference at two shapes."""
    s = measure_sweep(variants=VARIANTS, progress=Progress("stream sweep"))
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


DOOR: Door[Sweep] = Door("streaming read sweep", "section01", (FAMILY, "spin"), measure, _parse, _dump)
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
