"""The residual add with a planned geometry: the lab's own fix (steps 6-7), behind LAUNCHLAB_LAB_ADD.

main's residual add (decode_ops:add_inplace) runs one element per thread in blocks of 256: 28 blocks for the
7,168-wide hidden row, 186 launches per token, each leaving 104 of the H200's 132 SMs without a block. The lab
has the learner write a *plan* -- a function of the width n that returns (grid, block, ept), ept being the
elements each thread adds -- and the decode step launches kernels/residual_add.cu's add_inplace_ept with it when
the gate is 1; at 0 (the default and baseline) the step keeps main's launch, byte for byte the same build.

The kernel's index rule is the plan's arithmetic: thread t of block b adds elements [(b*block + t)*ept, +ept)
when its first index is below n. So a plan can be wrong two ways, and `coverage` counts both without a GPU:

    missed     grid * block * ept < n: the last elements are never added
    past_end   ept does not divide n (or a larger grid with such an ept): the last active thread writes past
               the end of h -- out of bounds, on someone else's memory

`check` refuses either (and a block or grid the GPU cannot launch) before any launch, in words; the grader
(launchlab.faces.rerun) runs a learner's plan over widths the notebook never shows.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from launchlab.core import gates, hardware, launch, loader

FAMILY = "residual_add"
KERNEL = "add_inplace_ept"
GATE = "LAB_ADD"
MAX_EPT = 8                         # elements per thread the lab allows (a register's worth of loads in flight)
MAIN_BLOCK = 256                    # main's add_inplace: one element per thread, 256 threads a block

class PlanError(launch.LaunchError):
    """A plan that cannot be launched as written; raised before any launch."""


@dataclass(frozen=True)
class Plan:
    grid: int
    block: int
    ept: int

    @property
    def threads(self) -> int:
        return self.grid * self.block

    def text(self) -> str:
        return f"grid {self.grid}, block {self.block}, {self.ept} element{'s' * (self.ept != 1)} per thread"


def main_plan(n: int) -> Plan:
    """main's geometry, in the plan's terms: one element per thread, blocks of 256."""
    return Plan(-(-n // MAIN_BLOCK), MAIN_BLOCK, 1)


def plan_of(value) -> Plan:
    """A plan from what a plan function returned: a Plan, or (grid, block, ept) as three whole numbers."""
    if isinstance(value, Plan):
        return value
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise PlanError(f"a plan is (grid, block, ept): three whole numbers, got {value!r}")
    names = ("grid", "block", "ept")
    for name, v in zip(names, value):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise PlanError(f"the plan's {name} must be a whole number, got {v!r} ({type(v).__name__})")
    return Plan(*(int(v) for v in value))


@dataclass(frozen=True)
class Coverage:
    """What the kernel's index rule does with a plan over n elements (arithmetic, no GPU)."""
    n: int
    active: int                     # threads whose first index is below n
    missed: int                     # elements no thread adds
    past_end: int                   # elements written past the end of h (and read past the end of a)

    @property
    def exact(self) -> bool:
        return self.missed == 0 and self.past_end == 0


def coverage(p: Plan, n: int) -> Coverage:
    """The elements a plan adds, misses and writes past the end of n: thread t's first index is t * ept, and a
    thread with a first index below n adds all of its ept elements."""
    if n < 1:
        raise PlanError(f"the width must be at least 1, got {n}")
    wanted = -(-n // p.ept)                          # threads the width needs at this ept
    active = min(p.threads, wanted)
    end = active * p.ept                             # one past the last element the active threads touch
    return Coverage(n, active, max(0, n - end), max(0, end - n))


def check(p: Plan, n: int, gpu: str = "H200") -> Plan:
    """Refuse, in words and before any launch, a plan the GPU cannot run or that does not cover n exactly."""
    if not 1 <= p.block <= hardware.spec(gpu).max_threads_per_block:
        raise PlanError(f"block {p.block}: a block holds 1 to {hardware.spec(gpu).max_threads_per_block} threads")
    if p.grid < 1:
        raise PlanError(f"grid {p.grid}: a launch needs at least one block")
    if not 1 <= p.ept <= MAX_EPT:
        raise PlanError(f"ept {p.ept}: each thread adds 1 to {MAX_EPT} elements")
    launch.check(p.grid, p.block, gpu=gpu)
    c = coverage(p, n)
    if c.past_end:
        raise PlanError(f"{p.text()} over n = {n:,}: the last thread starts at {(c.active - 1) * p.ept:,} and adds "
                        f"{p.ept}, so it writes {c.past_end} element{'s' * (c.past_end != 1)} past the end of h "
                        f"(ept must divide n, or the kernel would need a guard per element)")
    if c.missed:
        raise PlanError(f"{p.text()} over n = {n:,}: {p.grid} x {p.block} x {p.ept} = {p.threads * p.ept:,} "
                        f"elements, so the last {c.missed:,} are never added (the grid must cover n)")
    return p


# ------------------------------------------------------------------ the plan the gate launches
_planner: list[Callable[[int], object]] = []


def use(fn: Callable[[int], object] | None) -> None:
    """Register the plan function the gate's arm 1 launches (None: none registered)."""
    if fn is not None and not callable(fn):
        raise PlanError(f"use() takes a function of n that returns (grid, block, ept), got {fn!r}")
    _planner[:] = [] if fn is None else [fn]


def registered() -> Callable[[int], object] | None:
    return _planner[0] if _planner else None


def planned(n: int) -> Plan:
    """The registered plan at width n, checked."""
    fn = registered()
    if fn is None:
        raise PlanError(f"{gates.PREFIX}{GATE}=1 launches your plan, and none is registered: call "
                        f"fix.use(plan) first (or set the gate to 0)")
    return check(plan_of(fn(n)), n)


def active(n: int) -> Plan | None:
    """The plan the step launches now at width n: the registered one when the gate is 1, None for main's."""
    return planned(n) if gates.value(GATE) == "1" else None


def launch_plan(h, a, p: Plan, check_first: bool = True, stream=None) -> None:
    """h += a by add_inplace_ept with plan p (checked first unless the grader counts a raw launch)."""
    n = int(h.size)
    if a.size != n or h.dtype != np.float32 or a.dtype != np.float32:
        raise PlanError(f"h and a must be float32 of one size, got {h.dtype}{h.shape} and {a.dtype}{a.shape}")
    if check_first:
        check(p, n)
    loader.kernel(FAMILY, KERNEL).launch((p.grid,), p.block, (h, a, np.int32(n), np.int32(p.ept)),
                                         stream=stream)


# ------------------------------------------------------------------ numpy references
def add_ref(h: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The residual add in float32: one rounding per element, whatever the geometry."""
    return (np.asarray(h, np.float32) + np.asarray(a, np.float32)).astype(np.float32)


def simulate(p: Plan, n: int, pad: int = 64) -> np.ndarray:
    """How many times the kernel's index rule writes each slot of a buffer of n + pad (numpy, thread by
    thread: the check of `coverage`'s arithmetic)."""
    t = np.arange(p.threads, dtype=np.int64)
    first = t * p.ept
    first = first[first < n]
    idx = (first[:, None] + np.arange(p.ept)[None, :]).reshape(-1)
    return np.bincount(idx[idx < n + pad], minlength=n + pad)[:n + pad]


def emulate(p: Plan, h: np.ndarray, a: np.ndarray) -> np.ndarray:
    """What add_inplace_ept leaves in h under plan p (numpy, thread by thread): each element a thread's index rule
    reaches is h + a in float32, every other one is h as it was. For a plan that writes past the end it returns
    h[:n] only (what lies past the end is someone else's memory)."""
    h = np.asarray(h, np.float32)
    n = h.size
    t = np.arange(p.threads, dtype=np.int64)
    first = t[t * p.ept < n] * p.ept
    idx = (first[:, None] + np.arange(p.ept)[None, :]).reshape(-1)
    idx = idx[idx < n]
    out = h.copy()
    out[idx] = add_ref(h[idx], np.asarray(a, np.float32)[idx])
    return out


GUARD = 0x7FC0DEAD                   # a NaN payload no add of finite values produces


@dataclass(frozen=True)
class Counted:
    """A raw launch of a plan between guard words, counted on the GPU."""
    n: int
    missed: int                      # elements of h[:n] that are not h + a
    past_end: int                    # guard words after h[:n] that changed
    wrong: int                       # elements added but not to the float32 sum (should be 0)


def counted(p: Plan, n: int, pad: int = 64, seed: int = 7) -> Counted:  # pragma: no mutate block (live only)
    """Launch plan p over n elements WITHOUT the check, h and a each followed by `pad` guard words, and count
    what it did: the grader's measurement of a learner's plan. The launch geometry itself is still checked
    (launch.check: a block the GPU cannot run never reaches the driver); a plan that writes further past the
    end than the pad is refused before the launch."""
    import cupy as cp
    launch.check(p.grid, p.block)
    if not 1 <= p.ept <= MAX_EPT:
        raise PlanError(f"ept {p.ept}: each thread adds 1 to {MAX_EPT} elements")
    c = coverage(p, n)
    if c.past_end > pad:
        raise PlanError(f"{p.text()} writes {c.past_end} past the end of {n}: more than the {pad} guard words")
    rng = np.random.default_rng(seed)
    h0 = rng.standard_normal(n).astype(np.float32)
    a0 = rng.standard_normal(n).astype(np.float32)
    guard = np.full(pad, GUARD, np.uint32).view(np.float32)
    h = cp.asarray(np.concatenate([h0, guard]))
    a = cp.asarray(np.concatenate([a0, guard]))
    loader.kernel(FAMILY, KERNEL).launch((p.grid,), p.block, (h, a, np.int32(n), np.int32(p.ept)))
    got = cp.asnumpy(h)
    want = add_ref(h0, a0)
    body = got[:n].view(np.uint32)
    untouched = body == h0.view(np.uint32)
    right = body == want.view(np.uint32)
    return Counted(n, int(np.sum(untouched & ~right)), int(np.sum(got[n:].view(np.uint32) != GUARD)),
                   int(np.sum(~untouched & ~right)))
