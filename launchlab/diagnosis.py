"""§3.1: starvation, contention, or a real bound -- read from the floor, the time and the spread.

    floor  = bytes moved / device bandwidth          what the kernel SHOULD cost
    ratio  = measured median / floor                 how far off it is
    spread = stddev / median over >= 10 reps         how repeatable it is

A large ratio that repeats to ~1% is a property of the launch (the blocks are not there): starvation.
A time that wanders is other work interfering: contention. A time near the floor is bandwidth-bound; one that
arithmetic explains is arithmetic-bound. (Lecture §3.1: 87 us vs a 0.9 us floor, stddev 982 ns.)
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

TIGHT = 0.05        # spread below this is "metronome" regular
NOISY = 0.10        # spread above this is contention's signature
NEAR_FLOOR = 1.7    # within 1.7x of the floor counts as at the floor (bandwidth-bound)
STARVED = 2.5       # a gap of 2.5x or more that is tight counts as starvation

# At microsecond scale a launch has a fixed cost of its own: a trivial kernel replayed in a CUDA graph takes
# ~0.8 us per launch on the H200 (notebook 00). Pass it as fixed_us and it joins the floor, so a 2 us kernel
# is not called starved for failing to reach a bytes-only floor of 0.5 us that no launch can reach.


@dataclass
class Diagnosis:
    verdict: str                 # "starvation", "contention", "bandwidth-bound", "arithmetic-bound", "unclear"
    floor_us: float
    median_us: float
    ratio: float
    spread: float                # stddev / median
    n: int
    reasons: list = field(default_factory=list)

    def __str__(self) -> str:
        head = (f"{self.verdict.upper()}: median {self.median_us:.3f} us vs floor {self.floor_us:.3f} us "
                f"({self.ratio:.1f}x), spread {self.spread:.1%} over {self.n} reps")
        return "\n".join([head] + [f"  - {r}" for r in self.reasons])


def diagnose(bytes_moved: float, reps_us, bandwidth_tbs: float, flops: float = 0.0,
             flop_rate_tflops: float | None = None, fixed_us: float = 0.0) -> Diagnosis:
    """Diagnose from the bytes a launch moves, its per-rep times (>= 10), the device bandwidth (TB/s),
    optionally its FLOPs and the arithmetic rate, and optionally a fixed per-launch cost (us)."""
    reps = [float(x) for x in reps_us]
    if len(reps) < 10:
        raise ValueError(f"a diagnosis needs the spread over at least 10 reps, got {len(reps)}")
    if bytes_moved <= 0 or bandwidth_tbs <= 0:
        raise ValueError("bytes moved and bandwidth must be positive")
    med = statistics.median(reps)
    sd = statistics.stdev(reps)
    floor = bytes_moved / (bandwidth_tbs * 1e12) * 1e6 + fixed_us
    ratio, spread = med / floor, sd / med
    arith_us = flops / (flop_rate_tflops * 1e12) * 1e6 if flops and flop_rate_tflops else 0.0
    d = Diagnosis("unclear", floor, med, ratio, spread, len(reps))
    d.reasons.append(f"floor = {bytes_moved / 1e6:.3f} MB / {bandwidth_tbs:.2f} TB/s"
                     + (f" + {fixed_us:.2f} us per launch" if fixed_us else "") + f" = {floor:.3f} us")
    if arith_us and arith_us >= 0.5 * med:
        d.verdict = "arithmetic-bound"
        d.reasons.append(f"the arithmetic alone takes {arith_us:.3f} us, {arith_us / med:.0%} of the time")
        return d
    if spread > NOISY:
        d.verdict = "contention"
        d.reasons.append(f"spread {spread:.1%} > {NOISY:.0%}: slow inconsistently -- other work is interfering")
        return d
    if ratio <= NEAR_FLOOR:
        d.verdict = "bandwidth-bound"
        d.reasons.append(f"within {NEAR_FLOOR:.1f}x of the floor: the bytes (and the launch) explain the time")
        return d
    if ratio >= STARVED and spread <= TIGHT:
        d.verdict = "starvation"
        d.reasons.append(f"{ratio:.0f}x off the floor yet repeatable to {spread:.1%}: a structural property of "
                         f"the launch, not of the machine's state")
        d.reasons.append("not contention (that would be noisy); not arithmetic "
                         + ("(it accounts for little of the time)" if flops else "(none given to account for it)"))
        return d
    d.reasons.append(f"ratio {ratio:.1f}x with spread {spread:.1%}: neither tight-and-far nor noisy; "
                     f"measure more reps or profile")
    return d
