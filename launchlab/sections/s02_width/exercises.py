"""§2's exercises."""
from __future__ import annotations

from launchlab.core.exercise import Exercise, register
from launchlab.sections.s02_width import accuracy, rmsnorm
from launchlab.sections.s02_width import turn
from launchlab.kernels import rms_norm as rms_kernel
from launchlab.core import transfer


# ------------------------------------------------------------------ notebook 02
def _reduction_loads(rec) -> int:
    return max(rec.in_flight.arm("original", "auto").loop_loads[:2])


register(Exercise(
    "02.inflight_reduction", "bytes of x that one trip of the original kernel's reduction loop has in flight "
                             "across its 128 threads",
    lambda rec: 128 * _reduction_loads(rec) * 4,
    lambda rec: f"the SASS shows {_reduction_loads(rec)} loads of x per trip of the unrolled reduction loop: 128 "
                f"threads x {_reduction_loads(rec)} loads x 4 B = {128 * _reduction_loads(rec) * 4:,} B -- not the "
                f"512 B of one load per thread that the lecture's arithmetic assumes.",
    hint="count the loads of x the SASS listing shows in one trip of the reduction loop (not one per thread), then "
         "threads x loads x 4 bytes.",
    recorded=lambda: (rmsnorm.recorded(),),
    shown_by=(r"reduction[^\n]*\b8,?192 B", r"reduction[^\n]*\b8 KiB")))


def _chain_speedup(rec) -> float:
    f = rec.in_flight
    return f.arm("original", "1").cold.median / f.arm("wide", "1").cold.median


register(Exercise(
    "02.chain_widening", "with one load in flight per thread (LAUNCHLAB_RMS_UNROLL=1), what does widening the "
                         "apply buy at 7,168, cold: 'about 32x', 'about 2x' or 'nothing'",
    lambda rec: "about 32x" if _chain_speedup(rec) > 10 else ("about 2x" if _chain_speedup(rec) > 1.3 else "nothing"),
    lambda rec: f"measured {_chain_speedup(rec):.2f}x. The apply's bytes in flight do grow ~32x, but the reduction "
                f"stays on 128 threads (its width is part of its numerics) and is a chain of 56 dependent loads "
                f"in both arms -- now most of the time. Amdahl, inside one kernel.",
    kind="choice", choices=("about 32x", "about 2x", "nothing"),
    hint="widening moves the apply's loads, not the reduction's: with one load in flight per thread, which part "
         "of the kernel is left holding the time, and does widening touch it?",
    recorded=lambda: (rmsnorm.recorded(),),
    shown_by=('unroll 1 .*(32|2)\\.\\d+x',)))


register(Exercise(
    "02.kl_wide_apply", "the widened apply's KL(main || arm) on the decode step, in nats",
    lambda acc: acc.arm("widened apply", 2048).mean_kl,
    lambda acc: f"exactly {acc.arm('widened apply', 2048).mean_kl:g}: its logits are byte-identical to main's at every "
                f"position ({sum(acc.arm('widened apply', 2048).identical)} of {acc.tokens}) and at both depths, and "
                f"KL of identical distributions is 0 -- not a small number, none at all. 'About 1e-12' would mean the "
                f"bytes moved; the widened reduction, whose bytes do move, reads "
                f"{acc.arm('widened reduction', 2048).mean_kl:.1e}.",
    hint="compare the widened apply's logits with main's byte for byte in the accuracy table: what is the KL "
         "divergence of a distribution from itself?",
    recorded=lambda: (accuracy.recorded(),),
    shown_by=('wide(ned)? apply\\s+2,048\\s+\\d',)))


# ------------------------------------------------------------------ the your-turn launch (turn.py)
PLATEAU = 1.05


def _one_row():
    rec = turn.recorded()
    return sorted((p.shape.threads, p.timing.median) for p in rec.points if p.shape.blocks == 1)


def _plateau_block() -> int:
    times = _one_row()
    best = min(t for _, t in times)
    return min(b for b, t in times if t <= PLATEAU * best)


register(Exercise(
    "02.turn_plateau_block", "the smallest block of the widened norm, at one row of 7,168, whose time is within 5 % "
                             "of the fastest block's on the H200",
    _plateau_block,
    lambda: (lambda b, times: f"The H200's times at one row: fastest {min(t for _, t in times):.2f} µs; block {b} is "
                              f"the first within 5 % of it ({dict(times)[b]:.2f} µs). 7,168 floats are 1,792 float4 "
                              f"loads: past a few hundred threads each thread has only a handful left, and the "
                              f"launch's fixed cost dominates.")(_plateau_block(), _one_row()),
    multiple_of=32,
    hint="find the fastest block's time in the one-row sweep, multiply it by 1.05, and take the smallest block "
         "whose time is at or under that: a block is a whole number of warps."))


transfer.mark(register(Exercise(
    "02.transfer_block_2720", "the block the widened norm plans for a row of 2,720 floats (16-byte aligned)",
    lambda: rms_kernel.plan(2720, True, wide=True, reduce="narrow").block,
    lambda: "2,720 floats are 680 float4 loads; the plan gives one thread per float4, rounded up to whole warps "
            "(680 / 32 = 21.25 -> 22 warps) and kept between 128 and 1,024: 704 threads, 24 of them with nothing "
            "to load.",
    hint="the plan gives one thread per float4 (four floats), rounds up to whole warps of 32 and keeps the block "
         "between 128 and 1,024.")), "a row of 2,720: a width the notebooks never launch")
