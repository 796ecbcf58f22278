"""Block timelines: where a launch's blocks ran (which SM) and when (start, end), read from the kernel itself.

A kernel instantiated with its timeline flag on (kernels/timeline.cuh: stream_read_timeline, fixed_work_timeline,
kda_walk<MODE, true>, kda_decode<MODE, true>) stamps, per block, %globaltimer at its start and after its last
barrier, and %smid. `capture()` points the module's `launchlab_timeline` at a buffer, runs one launch and reads
the stamps back as a `Timeline`. The default instantiations compile without the stamps (their SASS is unchanged).

From a timeline:
    sms_with_work          SMs that ran at least one block
    resident_warps(sm, t)  warps of the blocks alive on that SM at time t
    achieved_pct           resident warps averaged over each SM's active time, over max warps per SM -- the
                           quantity ncu reports as achieved occupancy (sm__warps_active ... per active cycle)
    waves()                blocks grouped by when they started: a second wave starts when the first ends

%globaltimer's resolution is measured, not assumed (`resolution()`; kernels/timeline.cu): a stamp cannot
resolve anything shorter than one tick.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

from launchlab.core import gates, hardware, loader, mode

FAMILY = "timeline"
SYMBOL = "launchlab_timeline"
_armed: set[str] = set()          # families whose stamp buffer capture() has set, right now


class TimelineError(RuntimeError):
    pass


def stamped(family: str, explicit: bool | None = None) -> bool:
    """Whether a launch of `family` should run its stamped twin: `explicit` if given, else the gate
    LAUNCHLAB_TIMELINE. A stamped launch needs a buffer to write into, so outside capture() it is refused
    before it reaches the GPU (the stamps would otherwise go to address 0)."""
    on = (gates.value("TIMELINE") == "1") if explicit is None else bool(explicit)
    if on and family not in _armed:
        raise TimelineError(f"a stamped {family} launch needs a buffer for its stamps: run it inside "
                            f"timeline.capture({family!r}, ...) (LAUNCHLAB_TIMELINE=1 only selects the twin)")
    return on


@dataclass
class Timeline:
    """One launch's blocks: start and end (ns, %globaltimer, relative to the first start) and SM, by block
    index; and the launch's shape."""
    label: str
    grid: int
    block: int
    start_ns: list[int]
    end_ns: list[int]
    sm: list[int]
    sm_count: int = 132
    max_warps_per_sm: int = 64

    def __post_init__(self):
        if not (len(self.start_ns) == len(self.end_ns) == len(self.sm) == self.grid):
            raise ValueError(f"{self.label}: a timeline needs one start, end and SM per block ({self.grid})")

    @property
    def warps_per_block(self) -> int:
        return -(-self.block // 32)

    @property
    def sms_with_work(self) -> int:
        return len(set(self.sm))

    @property
    def span_ns(self) -> int:
        return max(self.end_ns) - min(self.start_ns)

    def blocks_on(self, sm: int) -> list[int]:
        return [b for b, s in enumerate(self.sm) if s == sm]

    def max_resident_per_sm(self) -> int:
        """Most blocks of this launch alive on one SM at one time."""
        best = 0
        for s in set(self.sm):
            ev = sorted([(self.start_ns[b], 1) for b in self.blocks_on(s)]
                        + [(self.end_ns[b], -1) for b in self.blocks_on(s)], key=lambda e: (e[0], e[1]))
            n = 0
            for _, d in ev:
                n += d
                best = max(best, n)
        return best

    def achieved_pct(self) -> float:
        """Achieved occupancy in percent: the warp-time of every block, over the time each SM had at least one
        block, over the SM's warp slots. ncu's sm__warps_active.avg.pct_of_peak_sustained_active measures the
        same thing with cycle counters."""
        warp_time, active = 0.0, 0.0
        for s in set(self.sm):
            bs = self.blocks_on(s)
            warp_time += self.warps_per_block * sum(self.end_ns[b] - self.start_ns[b] for b in bs)
            active += _union_length([(self.start_ns[b], self.end_ns[b]) for b in bs])
        return 100.0 * warp_time / active / self.max_warps_per_sm if active else 0.0

    def waves(self) -> list[list[int]]:
        """Blocks grouped into waves, in start order: a block opens a new wave when it starts at or after the
        end of some block of the current wave (it can only have taken a slot that block freed)."""
        out: list[list[int]] = [[]]
        first_end = float("inf")
        for b in sorted(range(self.grid), key=lambda x: self.start_ns[x]):
            if out[-1] and self.start_ns[b] >= first_end:
                out.append([])
                first_end = float("inf")
            out[-1].append(b)
            first_end = min(first_end, self.end_ns[b])
        return out


def _union_length(intervals) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


# ------------------------------------------------------------------ live: capture one launch
def _symbol(family: str):
    import cupy as cp
    ptr = loader.module(family).get_global(SYMBOL)
    return cp.ndarray((1,), dtype=cp.uint64, memptr=ptr)


def capture(family: str, launch_fn, grid: int, block: int, label: str) -> Timeline:
    """Run `launch_fn()` -- one launch of `family` with `grid` blocks (x times y) of `block` threads, stamped
    (timeline=True, or any launch under LAUNCHLAB_TIMELINE=1) -- with the module's stamp buffer pointed at fresh
    memory, and read the stamps back."""
    mode.require_live("capturing a block timeline")
    import cupy as cp
    buf = cp.full(3 * grid, np.iinfo(np.uint64).max, dtype=cp.uint64)
    slot = _symbol(family)
    slot[0] = buf.data.ptr
    _armed.add(family)
    try:
        launch_fn()
        cp.cuda.Device().synchronize()
    finally:
        _armed.discard(family)
        slot[0] = 0
    raw = cp.asnumpy(buf).reshape(grid, 3)
    if np.any(raw == np.iinfo(np.uint64).max):
        raise RuntimeError(f"{label}: {int(np.sum(np.any(raw == np.iinfo(np.uint64).max, axis=1)))} blocks left "
                           f"no stamp (was a timeline instantiation launched with {grid} blocks?)")
    t0 = int(raw[:, 0].min())
    spec = hardware.from_device()
    return Timeline(label, grid, block, [int(x) - t0 for x in raw[:, 0]], [int(x) - t0 for x in raw[:, 1]],
                    [int(x) for x in raw[:, 2]], spec.sm_count, spec.max_threads_per_sm // 32)


@dataclass
class Resolution:
    """%globaltimer's update interval on this GPU: the gaps between successive distinct readings."""
    gaps_ns: list[int]

    @property
    def tick_ns(self) -> float:
        return float(statistics.median(self.gaps_ns))

    @property
    def min_ns(self) -> int:
        return int(min(self.gaps_ns))


def resolution(n: int = 256) -> Resolution:
    """Read %globaltimer back to back in one thread and keep the gaps between distinct values."""
    mode.require_live("measuring %globaltimer")
    import cupy as cp
    out = cp.zeros(n, dtype=cp.uint64)
    loader.kernel(FAMILY, "globaltimer_ticks").launch(1, 32, (out, np.int32(n)))
    v = cp.asnumpy(out).astype(np.int64)
    return Resolution([int(x) for x in np.diff(v)])
