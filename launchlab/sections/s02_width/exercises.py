"""§2's exercises."""
from __future__ import annotations

from launchlab.core.exercise import Exercise, register
from launchlab.sections.s02_width import accuracy, rmsnorm


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
    abs_tol=0.0,
    recorded=lambda: (accuracy.recorded(),),
    shown_by=('wide(ned)? apply\\s+2,048\\s+\\d',)))
