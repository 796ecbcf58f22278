"""Your turn: one launch whose grid and block the learner writes, in a cell of every section notebook.

A section declares its `Turn`: the kernel it launches (one of the section's own, from kernels/), the workload it
runs on, the section's own rules for a geometry (a grid that must cover the row, a block the kernel's
reduction needs), how the section times it (a CUDA graph, hot or cold L2) and the (grid, block, shared
memory) points the recorder measures on the H200. `turn.launch(grid, block, smem)` then does, in this order:

1. checks the geometry: the section's rules, then the GPU's and the kernel's limits (launch.check, with the
   registers and static shared memory of the compiled kernel). A bad one raises launch.LaunchError here,
   before anything reaches the driver, so the notebook's CUDA context keeps working;
2. compiles the kernel with NVRTC (registers, spills: ptxas's report, on any machine) and asks the occupancy
   calculator what this block allows (resident blocks per SM, the limiter) and what the grid is in SMs;
3. times it: live, the launch runs now through the course's checked path (loader.Kernel.launch) and is timed
   the section's way; replay, the time is the H200's when that exact launch was recorded, and otherwise
   the answer says in one line that this launch needs a GPU and names the nearest recorded launches.

The recorder measures every point of every turn (recording `your_turn`, one key per section). Two sections
that launch the same kernel on the same workload share one set of points (`shares`).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable

from launchlab.core import diagnosis, hardware, launch, loader, mode, occupancy, recordings, timing
from launchlab.core.door import Door
from launchlab.core.width import fit

RECORDING = "your_turn"


@dataclass(frozen=True)
class Shape:
    """A launch's geometry as the learner wrote it, normalized to three dimensions."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int = 0

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def key(self) -> tuple:
        return (self.grid, self.block, self.smem)

    def text(self) -> str:
        g = self.grid[0] if self.grid[1:] == (1, 1) else self.grid
        b = self.block[0] if self.block[1:] == (1, 1) else self.block
        return f"grid {g}, block {b}" + (f", smem {self.smem:,} B" if self.smem else "")


def shape(grid, block, smem: int = 0) -> Shape:
    """Normalize what the learner wrote (ints or 1-3 ints); refuse what is not whole numbers."""
    g = launch._dims(grid, "grid")
    b = launch._dims(block, "block")
    s = launch._int(smem, "dynamic shared memory")
    return Shape(g, b, s)


@dataclass
class Compare:
    """What the output of one launch is against the reference the section names: cmp, not a tolerance."""
    against: str                  # the reference, in words
    identical: bool
    differing: int                # elements whose bytes differ
    elements: int

    def text(self) -> str:
        if self.identical:
            return f"cmp against {self.against}: byte-identical ({self.elements:,} elements)"
        return f"cmp against {self.against}: {self.differing:,} of {self.elements:,} elements differ in their bytes"

    def to_dict(self) -> dict:
        return {"against": self.against, "identical": self.identical, "differing": self.differing,
                "elements": self.elements}

    @classmethod
    def from_dict(cls, d: dict) -> "Compare":
        return cls(d["against"], bool(d["identical"]), int(d["differing"]), int(d["elements"]))


@dataclass
class Measured:
    """One recorded (or just measured) launch: its geometry, its time, and its cmp where the section asks."""
    shape: Shape
    timing: timing.Timing
    compare: Compare | None = None
    abba: timing.ABBA | None = None      # a section that times two arms interleaved: its ABBA (timing = arm B's reps)

    def to_dict(self) -> dict:
        return ({"grid": list(self.shape.grid), "block": list(self.shape.block), "smem": self.shape.smem,
                 "timing": self.timing.to_dict()} | ({"compare": self.compare.to_dict()} if self.compare else {})
                | ({"abba": self.abba.to_dict()} if self.abba else {}))

    @classmethod
    def from_dict(cls, d: dict) -> "Measured":
        s = Shape(tuple(int(v) for v in d["grid"]), tuple(int(v) for v in d["block"]), int(d.get("smem", 0)))
        c, ab = d.get("compare"), d.get("abba")
        return cls(s, timing.Timing.from_dict(d["timing"]), Compare.from_dict(c) if c else None,
                   timing.ABBA.from_dict(ab) if ab else None)


def measured(s: Shape, t, compare: Compare | None = None) -> Measured:
    """What a bench's time() gave (a Timing, or an ABBA of the section's two arms) as one Measured."""
    if isinstance(t, timing.ABBA):
        reps = [x for r in t.arm("B") for x in r.reps_us]
        b = t.arm("B")[0]
        return Measured(s, timing.Timing(reps, b.method, b.launches_per_rep, t.labels[1], b.shared), compare, t)
    return Measured(s, t, compare)


@dataclass
class Recorded:
    """A turn's points as the recorder measured them, with the recording's provenance line."""
    key: str
    points: list[Measured]
    provenance: str = field(default="", compare=False)

    def at(self, s: Shape) -> Measured | None:
        for p in self.points:
            if p.shape.key() == s.key():
                return p
        return None

    def nearest(self, s: Shape, n: int = 4) -> list[Measured]:
        """The recorded launches around `s`, one on each side of the edit where the recording has one: the
        closest smaller and larger block (at the closest grid), the closest smaller and larger grid (among the
        recorded blocks closest to `s`'s, same shared memory first); then the closest overall (same block and
        shared memory first, then grid and block by ratio, so 265 is nearer 264 than 300). At most `n`, closest
        first."""
        def lg(a: int, b: int) -> float:
            return abs(math.log(max(a, 1) / max(b, 1)))

        def dist(p: Measured) -> tuple:
            same = (p.shape.block == s.block) + (p.shape.smem == s.smem)
            return (-same, round(lg(p.shape.blocks, s.blocks) + lg(p.shape.threads, s.threads), 9), p.shape.key())

        def by_block(p: Measured) -> tuple:
            return (round(lg(p.shape.threads, s.threads), 9), round(lg(p.shape.blocks, s.blocks), 9),
                    p.shape.smem != s.smem, p.shape.key())

        def by_grid(p: Measured) -> tuple:
            return (p.shape.smem != s.smem, round(lg(p.shape.blocks, s.blocks), 9), p.shape.key())

        pts = self.points
        closest = min((round(lg(p.shape.threads, s.threads), 9) for p in pts), default=0)
        near_block = [p for p in pts if round(lg(p.shape.threads, s.threads), 9) == closest]
        sides = [sorted((p for p in pts if p.shape.threads < s.threads), key=by_block),
                 sorted((p for p in pts if p.shape.threads > s.threads), key=by_block),
                 sorted((p for p in near_block if p.shape.blocks < s.blocks), key=by_grid),
                 sorted((p for p in near_block if p.shape.blocks > s.blocks), key=by_grid)]
        picked: list[Measured] = []
        for side in sides:
            if side and side[0] not in picked:
                picked.append(side[0])
        for p in sorted(pts, key=dist):
            if len(picked) >= n:
                break
            if p not in picked:
                picked.append(p)
        return sorted(picked[:n], key=dist)


@dataclass
class Run:
    """The answer to one your-turn launch: geometry, compile, occupancy, and the time (or why there is none)."""
    turn: "Turn"
    shape: Shape
    expr: str
    registers: int
    spills: int                    # spill stores + loads per thread (ptxas), -1 where unknown
    compiled: str                  # where the registers come from, in words
    occupancy: occupancy.Occupancy
    gpu: hardware.GPUSpec
    timing: timing.Timing | None
    source: str                    # "measured now on ..." / "H200 recording ..." / why none
    nearest: list[Measured] = field(default_factory=list)
    compare: Compare | None = None
    abba: timing.ABBA | None = None
    provenance: str = ""           # replay: the recording's provenance line

    @property
    def blocks_per_sm_of_grid(self) -> float:
        """Blocks ÷ SMs: the lecture's first multiplication."""
        return self.shape.blocks / self.gpu.sm_count

    @property
    def waves(self) -> float:
        return self.shape.blocks / self.occupancy.blocks_per_wave

    @property
    def spread(self) -> float | None:
        if self.timing is None or self.timing.n < 2:
            return None
        return diagnosis.robust_spread(self.timing.reps_us)

    def lines(self) -> list[str]:
        o, g = self.occupancy, self.gpu
        fam = self.turn.family
        out = [f"launch   kernels/{fam}.cu {self.expr} <<<{self.shape.grid}, {self.shape.block}, {self.shape.smem}>>>"
               f" -- {self.turn.what}",
               f"compile  {self.registers} registers/thread, "
               + (f"{self.spills} spill bytes" if self.spills >= 0 else "spills unknown") + f" ({self.compiled})",
               f"occupancy {o.blocks_per_sm} block(s)/SM resident ({o.warps_per_sm}/{o.max_warps_per_sm} warps), "
               f"limited by {' and '.join(o.limiter)}; one wave = {o.blocks_per_wave:,} blocks",
               f"grid     {self.shape.blocks:,} blocks ÷ {g.sm_count} SMs = {self.blocks_per_sm_of_grid:.2f} per SM, "
               f"{self.waves:.2f} of a wave ({math.ceil(self.waves)} wave(s))"]
        if self.timing is not None:
            t = self.timing
            out.append(f"time     median {t.median:.2f} µs, robust spread {self.spread:.1%}, min {t.min:.2f}, "
                       f"max {t.max:.2f}, n={t.n} ({self.turn.instrument}, {t.l2} L2)")
            out.append(f"source   {self.source}" + (f" ({self.provenance})" if self.provenance else ""))
        else:
            out.append(f"time     {self.source}")
            for p in self.nearest:
                out.append(f"         nearest recorded: {p.shape.text():<34} {p.timing.median:9.2f} µs "
                           f"({p.timing.l2} L2)")
        if self.abba is not None:
            ab = self.abba
            a, b = (statistics.median(ab.medians(x)) for x in "AB")
            out.append(f"ABBA     {len(ab.order) // 2} pairs interleaved: A {ab.labels[0]} {a:.2f} µs, "
                       f"B {ab.labels[1]} {b:.2f} µs, B/A = {b / a:.3f}; per rep " + " ".join(
                           f"{o}:{r.median:.2f}" for o, r in zip(ab.order, ab.results)))
        if self.compare is not None:
            out.append(f"bytes    {self.compare.text()}")
        return out

    def __str__(self) -> str:
        return "\n".join(fit(ln, hang=9) for ln in self.lines())


@dataclass
class Turn:
    """One section's your-turn launch (see the module's docstring)."""
    key: str                                    # the section ("01")
    family: str                                 # the kernel family (kernels/<family>.cu)
    kernel: Callable[[Shape], str]              # the instantiation this shape launches (after `rules`)
    what: str                                   # the workload, in a few words
    instrument: str                             # how the section times it, in words
    rules: Callable[[Shape], "Shape | None"]    # the section's own refusals (raise launch.LaunchError); may
                                                # return the shape completed (shared memory the kernel needs)
    bench: Callable[[], object]                 # live: an object with time(shape) -> Timing, compare(shape)
    points: tuple[tuple, ...] = ()              # (grid, block, smem) the recorder measures
    shares: "Turn | None" = None                # replay another section's points (same kernel and workload)
    families: tuple[str, ...] = ()              # more families the bench launches (for the recording's hashes)
    on_cpu: Callable[[Shape], Compare] | None = None   # replay, a point not recorded: the section's cmp computed
                                                # on the CPU by the kernel's numpy reference (said as such)
    pairs: int = 0                              # an ABBA section: the pairs its bench runs (replay says when the
                                                # recording holds fewer, until it is made again)
    _bench: object = field(default=None, init=False, repr=False)

    @property
    def recording_key(self) -> str:
        return self.shares.key if self.shares is not None else self.key

    # ------------------------------------------------------------ the checks, on any machine
    def check(self, grid, block, smem: int = 0) -> tuple[Shape, str, "object"]:
        """The section's rules, then the GPU's and the kernel's: (shape, kernel, its NVRTC resources)."""
        s = shape(grid, block, smem)
        launch.check(s.grid, s.block, s.smem, gpu=self.gpu())      # the GPU's limits first, then the section's
        s = self.rules(s) or s
        expr = self.kernel(s)
        res, _ = loader.compiled_resources(self.family, expr)
        launch.check(s.grid, s.block, s.smem, static_smem=res.smem_static, regs=res.registers, gpu=self.gpu())
        return s, expr, res

    @staticmethod
    def gpu() -> hardware.GPUSpec:
        return mode.choose(live=hardware.from_device, replay=lambda: hardware.spec("H200"))

    def launch(self, grid, block, smem: int = 0) -> Run:
        """Check, compile, then launch and time (live) or look up the H200's time (replay)."""
        s, expr, res = self.check(grid, block, smem)
        _, compiled = loader.compiled_resources(self.family, expr)
        gpu = self.gpu()
        occ = occupancy.occupancy(s.threads, res.registers, s.smem + res.smem_static, gpu)
        spills = res.spill_stores + res.spill_loads if res.spill_stores >= 0 else -1
        run = Run(self, s, expr, res.registers, spills, compiled, occ, gpu, None, "")
        mode.choose(live=lambda: self._live(run), replay=lambda: self._replay(run))
        return run

    def _live(self, run: Run) -> None:  # pragma: no mutate block (live only)
        if self._bench is None:
            self._bench = self.bench()
        m = measured(run.shape, self._bench.time(run.shape), self._bench.compare(run.shape))
        run.timing, run.compare, run.abba = m.timing, m.compare, m.abba
        run.source = f"measured now on this {run.gpu.name}"

    def _replay(self, run: Run) -> None:
        rec = self.recorded()
        hit = rec.at(run.shape)
        if hit is not None:
            run.timing, run.compare, run.abba = hit.timing, hit.compare, hit.abba
            run.source = "the H200's time for this launch, from the recording"
            run.provenance = rec.provenance
            made = len(hit.abba.order) // 2 if hit.abba is not None else 0
            if made and made < self.pairs:
                run.source += (f"; recorded as an ABBA of {made} pairs, before this section's {self.pairs}: the "
                               f"{self.pairs}-pair run needs a GPU (live mode) until the recording is made again")
        else:
            run.source = ("this launch was not recorded on the H200: timing it needs a GPU (live mode); "
                          "the nearest recorded launches:")
            run.nearest = rec.nearest(run.shape)
            if self.on_cpu is not None:
                run.compare = self.on_cpu(run.shape)

    # ------------------------------------------------------------ recording
    def measure(self) -> Recorded:  # pragma: no mutate block (live only)
        """Live: every point of this turn, timed now (the recorder's)."""
        mode.require_live("recording the your-turn launches")
        b = self._bench = self._bench or self.bench()
        out = []
        for g, bl, sm in self.points:
            s, _, _ = self.check(g, bl, sm)
            out.append(measured(s, b.time(s), b.compare(s)))
        return Recorded(self.key, out, "live")

    def recorded(self, data_dir=None) -> Recorded:
        return self.door().recorded(data_dir) if self.shares is None else self.shares.recorded(data_dir)

    def door(self) -> Door:
        if self.shares is not None:
            raise ValueError(f"§{self.key}'s turn replays §{self.shares.key}'s points: it has no door of its own")
        if "_door" not in self.__dict__:
            key = self.key

            def parse(d: dict, prov: str) -> Recorded:
                part = d.get(key)
                if part is None:
                    raise recordings.RecordingError(f"recording {RECORDING} has no points for §{key}. Record them "
                                                    f"with: {recordings.record_command(RECORDING)}")
                return Recorded(key, [Measured.from_dict(p) for p in part["points"]], prov)

            def dump(r: Recorded) -> dict:
                return {key: {"points": [p.to_dict() for p in r.points]}}
            self.__dict__["_door"] = Door(f"your turn (§{key})", RECORDING, (self.family, "spin") + self.families,
                                         self.measure, parse, dump)
        return self.__dict__["_door"]


def graph_time(fn: Callable[[], object], launches: int,
               reps: int = 10) -> timing.Timing:  # pragma: no mutate block (live only)
    """A CUDA graph of `launches` calls, replayed `reps` times: hot L2 (the same buffers every launch)."""
    return timing.graph(fn, launches=launches, reps=reps)


def identical(got, ref) -> tuple[bool, int]:
    """cmp of two arrays' bytes, element by element: (all identical, how many elements differ)."""
    import numpy as np
    a = np.ascontiguousarray(got).view(np.uint8).reshape(got.size, -1)
    b = np.ascontiguousarray(ref).view(np.uint8).reshape(ref.size, -1)
    if a.shape != b.shape:
        raise ValueError(f"cannot cmp {got.dtype}{got.shape} with {ref.dtype}{ref.shape}")
    diff = int((a != b).any(axis=1).sum())
    return diff == 0, diff
