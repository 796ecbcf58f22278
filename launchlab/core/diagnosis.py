"""§3.1: starvation, contention, or a real bound -- read from the floor, the time and the spread.

    floor  = bytes moved / device bandwidth          what the kernel SHOULD cost
    ratio  = measured median / floor                 how far off it is
    spread = robust spread over >= 10 reps            how repeatable it is ((IQR / 1.349) / median, beside
                                                      the stddev, which one slow rep can blow up)

A large ratio that repeats to ~1% is a property of the launch (the blocks are not there): starvation, checked
against the geometry when it is given (blocks vs SMs x resident blocks per SM).
A time that wanders is other work interfering: contention. A time near the floor is bandwidth-bound; one that
arithmetic explains is arithmetic-bound. (Lecture §3.1: 87 us vs a 0.9 us floor, stddev 982 ns.)
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

# Thresholds, and why:
TIGHT = 0.02        # robust spread at or below 2% is "metronome" regular: the lecture's case is 982 ns of 87 us
                    # (1.1%); a us kernel replayed in a CUDA graph on an idle H200 repeats to 0.1-0.5% here
NOISY = 0.05        # robust spread above 5% is contention's signature: in notebook 03 a cold KDA step timed with
                    # events reads ~2% alone (32 ns event ticks on a 5 us step) and ~10% beside a streaming read
NEAR_FLOOR = 1.7    # within 1.7x of the floor counts as at the floor (bandwidth-bound)
STARVED = 2.5       # a gap of 2.5x or more that is tight counts as starvation...
STARVED_SMS = 0.5   # ...when the geometry, if given, leaves at least half the SMs without a block (the lab's
                    # step 2 flags every kernel under 50%): far-and-tight on a full grid is not a grid problem

# At microsecond scale a launch has a fixed cost of its own: a trivial kernel replayed in a CUDA graph
# (instruments.launch_costs(), recorded in notebook 00). Pass it as fixed_us and it joins the floor, so a 2 us kernel
# is not called starved for failing to reach a bytes-only floor of 0.5 us that no launch can reach.


def robust_spread(reps) -> float:
    """(interquartile range / 1.349) / median: the spread a normal distribution's stddev would have, but one
    slow rep (a launch queued behind another process's kernel) cannot move it. 0 for constant reps."""
    q1, _, q3 = statistics.quantiles([float(x) for x in reps], n=4, method="inclusive")
    return (q3 - q1) / 1.349 / statistics.median(reps)


@dataclass(frozen=True)
class Geometry:
    """Where the launch's blocks land: the evidence that "the blocks are not there"."""
    blocks: int
    sm_count: int = 132
    blocks_per_sm: int | None = None      # resident blocks per SM (the occupancy calculator), if known

    @property
    def sms_with_work(self) -> int:
        return min(self.blocks, self.sm_count)

    @property
    def share_sms(self) -> float:
        return self.sms_with_work / self.sm_count

    @property
    def share_slots(self) -> float | None:
        """Blocks / (SMs x resident blocks per SM): how much of one wave's room the launch fills."""
        return self.blocks / (self.sm_count * self.blocks_per_sm) if self.blocks_per_sm else None

    def describe(self) -> str:
        s = f"{self.blocks} blocks on {self.sm_count} SMs: {self.sms_with_work} SMs with work ({self.share_sms:.0%})"
        if self.blocks_per_sm:
            s += (f"; {self.blocks_per_sm} resident per SM -> {self.share_slots:.1%} of one wave's "
                  f"{self.sm_count * self.blocks_per_sm} slots")
        return s


@dataclass
class Diagnosis:
    verdict: str                 # "starvation", "contention", "bandwidth-bound", "arithmetic-bound", "unclear"
    floor_us: float
    median_us: float
    ratio: float
    spread: float                # robust: (IQR / 1.349) / median
    n: int
    stddev_spread: float = 0.0   # stddev / median, reported beside (one outlier can inflate it)
    geometry: Geometry | None = None
    reasons: list = field(default_factory=list)

    def __str__(self) -> str:
        head = (f"{self.verdict.upper()}: median {self.median_us:.3f} µs vs floor {self.floor_us:.3f} µs "
                f"({self.ratio:.1f}x), robust spread {self.spread:.1%} (stddev {self.stddev_spread:.1%}) over "
                f"{self.n} reps")
        return "\n".join([head] + [f"  - {r}" for r in self.reasons])


def diagnose(bytes_moved: float, reps_us, bandwidth_tbs: float, flops: float = 0.0,
             flop_rate_tflops: float | None = None, fixed_us: float = 0.0,
             geometry: Geometry | None = None) -> Diagnosis:
    """Diagnose from the bytes a launch moves, its per-rep times (>= 10), the device bandwidth (TB/s),
    optionally its FLOPs and the arithmetic rate, a fixed per-launch cost (us), and its geometry."""
    reps = [float(x) for x in reps_us]
    if len(reps) < 10:
        raise ValueError(f"a diagnosis needs the spread over at least 10 reps, got {len(reps)}")
    if bytes_moved <= 0 or bandwidth_tbs <= 0:
        raise ValueError("bytes moved and bandwidth must be positive")
    med = statistics.median(reps)
    floor = bytes_moved / (bandwidth_tbs * 1e12) * 1e6 + fixed_us
    ratio, spread = med / floor, robust_spread(reps)
    arith_us = flops / (flop_rate_tflops * 1e12) * 1e6 if flops and flop_rate_tflops else 0.0
    d = Diagnosis("unclear", floor, med, ratio, spread, len(reps), statistics.stdev(reps) / med, geometry)
    d.reasons.append(f"floor = {bytes_moved / 1e6:.3f} MB / {bandwidth_tbs:.2f} TB/s"
                     + (f" + {fixed_us:.2f} µs per launch" if fixed_us else "") + f" = {floor:.3f} µs")
    if geometry is not None:
        d.reasons.append("geometry: " + geometry.describe())
    if arith_us and arith_us >= 0.5 * med:
        d.verdict = "arithmetic-bound"
        d.reasons.append(f"the arithmetic alone takes {arith_us:.3f} µs, {arith_us / med:.0%} of the time")
        return d
    if spread > NOISY:
        d.verdict = "contention"
        d.reasons.append(f"robust spread {spread:.1%} > {NOISY:.0%}: slow inconsistently -- other work is "
                         f"interfering")
        return d
    if ratio <= NEAR_FLOOR:
        d.verdict = "bandwidth-bound"
        d.reasons.append(f"within {NEAR_FLOOR:.1f}x of the floor: the bytes (and the launch) explain the time")
        return d
    if ratio >= STARVED and spread <= TIGHT:
        if geometry is not None and geometry.share_sms >= STARVED_SMS:
            d.reasons.append(f"{ratio:.0f}x off the floor and tight, but {geometry.share_sms:.0%} of the SMs have "
                             f"work: not a grid too small -- look inside the block (loads in flight per thread, "
                             f"a dependent chain)")
            return d
        d.verdict = "starvation"
        d.reasons.append(f"{ratio:.0f}x off the floor yet repeatable to {spread:.1%}: a structural property of "
                         f"the launch, not of the machine's state")
        d.reasons.append("not contention (that would be noisy); not arithmetic "
                         + ("(it accounts for little of the time)" if flops else "(none given to account for it)"))
        if geometry is None:
            d.reasons.append("geometry not given: 'the blocks are not there' is inferred, not checked")
        return d
    d.reasons.append(f"ratio {ratio:.1f}x with robust spread {spread:.1%}: neither tight-and-far nor noisy; "
                     f"measure more reps or profile")
    return d
