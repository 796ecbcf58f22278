"""${title}: how many blocks of ${family}_scale an SM holds at each block size (from the compiled kernel's
registers and shared memory), and, on a GPU, the kernel's time at each (hot L2: a small buffer read again).

The kernel is kernels/${family}.cu; `scale` launches it (geometry checked first), `reference` is numpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from launchlab.core import loader, mode, occupancy, recordings, timing
from launchlab.core.door import Door
from launchlab.core.recordings import RECORDED

FAMILY = "${family}"
EXPR = "${family}_scale"
BLOCKS = (64, 128, 256, 512, 1024)
N = 1 << 20                    # floats: 4 MiB, inside the L2 (hot)


def reference(x: np.ndarray, a: float) -> np.ndarray:
    return (np.float32(a) * np.asarray(x, np.float32)).astype(np.float32)


def scale(x, y, a: float, grid: int, block: int):
    """y = a * x on the GPU: the launch geometry is checked before anything reaches the driver."""
    return loader.kernel(FAMILY, EXPR).launch(grid, block, (x, y, np.float32(a), np.int64(x.size)))


@dataclass
class Result:
    blocks: list[int]
    registers: int
    blocks_per_sm: list[int]               # the occupancy calculator on the kernel's resources
    hot_us: list[float | None]             # events around one launch at grid 132 (hot L2); None: not measured
    source: str = field(default="", metadata={RECORDED: False})


def _times() -> list[float]:
    import cupy as cp
    x = cp.arange(N, dtype=cp.float32)
    y = cp.empty_like(x)
    return [timing.events(lambda b=b: scale(x, y, 2.0, 132, b), reps=10, warmup=2).median for b in BLOCKS]


def measure() -> Result:
    regs, smem = loader.resources(FAMILY, EXPR)
    per_sm = [occupancy.occupancy(b, regs, smem).blocks_per_sm for b in BLOCKS]
    hot = mode.choose(live=_times, replay=lambda: [None] * len(BLOCKS))
    return Result(list(BLOCKS), regs, per_sm, hot, "measured now")


def _parse(d: dict, source: str) -> Result:
    r = recordings.decode(Result, d, "${key}")
    r.source = source
    return r


DOOR: Door[Result] = Door("${title}", "section${key}", (FAMILY,), measure, _parse, recordings.encode)
data = DOOR.data
recorded = DOOR.recorded


def headline(r: Result) -> dict:
    return {"registers": r.registers, "blocks_per_sm_block256": r.blocks_per_sm[r.blocks.index(256)]}
