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

from . import hardware, kernels, mode, occupancy, recordings, timing
from . import timeline as timeline_mod
from .door import Door
from .progress import Progress
from .recordings import RECORDED

FAMILY = "waves"
BLOCK = 64                   # 2 warps: with 4 blocks resident, 2 warps per scheduler, no issue contention
RESIDENCIES = (1, 2, 4)
ITERS = 10000                # ~40k cycles of dependent FMAs: ~20 us per wave at ~2 GHz
A, B = 0.9999, 1.0e-4        # x -> a*x + b converges to 1: no overflow, no denormals
BYTES_BLOCK = 256            # fixed_bytes: threads per block
BYTES_PER_BLOCK = 64 * 1024  # fixed_bytes: every block reads its own 64 KiB


def residency_smem(r: int, block: int = BLOCK, regs: int = 16, gpu="H200") -> int:
    """Dynamic shared memory per block that makes exactly `r` blocks fit on an SM (and shared memory the
    limiter). Derived with the occupancy calculator, so it is right for any GPU spec."""
    s = hardware.spec(gpu)
    if r < 1:
        raise ValueError("residency must be at least 1 block per SM")
    # largest 128-byte-aligned allocation with r per SM, minus the runtime's reserved 1 KiB
    alloc = (s.smem_per_sm // r) // 128 * 128
    smem = min(alloc - s.reserved_smem_per_block, s.smem_per_block_optin)
    occ = occupancy.occupancy(block, regs, smem, s)
    if occ.blocks_per_sm != r or "shared memory" not in occ.limiter:
        raise ValueError(f"cannot pin residency to {r} blocks/SM with shared memory at block {block}: "
                         f"{occ.describe()}")
    return smem


def grids_for(blocks_per_wave: int, waves: int = 4, per_wave: int = 8) -> list[int]:
    """Grid sizes that sample every wave evenly and bracket every wave boundary (k*W and k*W + 1)."""
    W = blocks_per_wave
    g = {1, waves * W}
    g |= {max(1, W * i // per_wave) for i in range(1, waves * per_wave + 1)}
    g |= {k * W + 1 for k in range(1, waves)}
    return sorted(g)


def fixed_work_reference(block: int, iters: int = ITERS, a: float = A, b: float = B) -> np.ndarray:
    """numpy reference (float64) of one block's output of fixed_work."""
    x = 1.0e-3 * (np.arange(block, dtype=np.float64) + 1)
    for _ in range(iters):
        x = x * a + b
    return x


def fixed_bytes_reference(x: np.ndarray, grid: int, vec_per_block: int) -> np.ndarray:
    return np.asarray(x[: grid * vec_per_block * 4], np.float64).reshape(grid, -1).sum(axis=1)


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



class WaveKernels:
    """The two wave kernels on a live GPU."""

    def __init__(self, max_grid: int = 8192):
        mode.require_live("the wave-quantization kernels")
        import cupy as cp

        self.cp = cp
        self.spec = hardware.from_device()
        self.max_grid = max_grid
        self.out = cp.empty(max_grid * 1024, dtype=cp.float32)
        self.work = kernels.kernel(FAMILY, "fixed_work")
        self.work_stamped = kernels.kernel(FAMILY, "fixed_work_timeline")
        self.bytes_k = kernels.kernel(FAMILY, "fixed_bytes")
        self.src = None

    def launch_work(self, grid: int, residency: int = 2, block: int = BLOCK, iters: int = ITERS,
                    timeline: bool | None = None):
        """fixed_work at `residency` blocks per SM; timeline=True (or LAUNCHLAB_TIMELINE=1) runs the twin that
        stamps each block's SM and lifetime (same shared memory, so the same residency), inside
        launchlab.timeline.capture()."""
        smem = residency_smem(residency, block, self.work.registers, self.spec)
        k = self.work_stamped if timeline_mod.stamped(FAMILY, timeline) else self.work
        k.launch(grid, block, (self.out, np.int32(iters), np.float32(A), np.float32(B)), smem=smem, spec=self.spec)
        return smem

    def _source(self, grid: int):
        need = grid * BYTES_PER_BLOCK // 4
        if self.src is None or self.src.size < need:
            self.src = self.cp.random.default_rng(1).random(max(need, 1 << 24), dtype=self.cp.float32)
        return self.src

    def launch_bytes(self, grid: int, block: int = BYTES_BLOCK):
        src = self._source(grid)
        self.bytes_k.launch(grid, block, (src, np.int32(BYTES_PER_BLOCK // 16), self.out), spec=self.spec)

    def check_references(self) -> dict:
        """Max relative error of both kernels against their numpy references."""
        cp = self.cp
        self.out[: 3 * BLOCK] = np.nan
        self.launch_work(3, 2, BLOCK, iters=1000)
        got = cp.asnumpy(self.out[: 3 * BLOCK]).reshape(3, BLOCK).astype(np.float64)
        ref = fixed_work_reference(BLOCK, 1000)
        e1 = float(np.max(np.abs(got - ref) / np.abs(ref)))
        grid = 37
        self.out[:grid] = np.nan
        self.launch_bytes(grid)
        got = cp.asnumpy(self.out[:grid]).astype(np.float64)
        ref = fixed_bytes_reference(cp.asnumpy(self._source(grid)), grid, BYTES_PER_BLOCK // 16)
        e2 = float(np.max(np.abs(got - ref) / np.abs(ref)))
        return {"fixed_work": e1, "fixed_bytes": e2}

    def staircase(self, residency: int, waves: int = 4, reps: int = 10, progress=None) -> Staircase:
        occ = occupancy.occupancy(BLOCK, self.work.registers,
                                  residency_smem(residency, BLOCK, self.work.registers, self.spec)
                                  + self.work.smem_static, self.spec)
        W = occ.blocks_per_wave
        grids = grids_for(W, waves)
        ts = []
        for i, g in enumerate(grids):
            ts.append(timing.events(lambda: self.launch_work(g, residency), reps=reps, warmup=2))
            if progress:
                progress(i + 1, len(grids))
        return Staircase(residency, W, residency_smem(residency, BLOCK, self.work.registers, self.spec),
                         BLOCK, grids, ts)

    def ramp(self, waves: int = 4, reps: int = 10) -> Ramp:
        occ = occupancy.occupancy(BYTES_BLOCK, self.bytes_k.registers, self.bytes_k.smem_static, self.spec)
        W = occ.blocks_per_wave
        grids = grids_for(W, waves)
        ts = [timing.events(lambda: self.launch_bytes(g), reps=reps, warmup=2) for g in grids]
        return Ramp(BYTES_BLOCK, BYTES_PER_BLOCK, W, grids, ts)


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


def measure() -> WaveData:
    w = WaveKernels()
    stairs = [w.staircase(r, progress=Progress(f"{r} block(s)/SM")) for r in RESIDENCIES]
    return WaveData(stairs, w.ramp(), ITERS, w.check_references(), "live")


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
