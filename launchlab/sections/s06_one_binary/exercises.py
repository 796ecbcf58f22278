"""§6's exercises."""
from __future__ import annotations

from launchlab.core.exercise import Exercise, register
from launchlab.kernels import splits
from launchlab.sections.s06_one_binary import onebinary
from launchlab.sections.s06_one_binary import turn
from launchlab.core.yourturn import shape
import statistics
from launchlab.core import transfer


# ------------------------------------------------------------------ §6 one binary, two arms
def _eval_gain(d) -> float:
    a, b = d.eval.main_ms, d.eval.fixed_ms
    return 100 * (a / b - 1)


register(Exercise(
    "06.eval_gain", "the fixed arm's gain in tok/s over main, in %, from eval's two medians (ms/token) printed above",
    _eval_gain,
    lambda d: (f"tok/s is 1000 / (ms per token), so the gain is main's ms over fixed's ms, minus one: "
               f"{d.eval.main_ms:.3f} / {d.eval.fixed_ms:.3f} - 1 = {_eval_gain(d):+.1f} %. Not (main - fixed) / "
               f"main = {100 * (d.eval.main_ms - d.eval.fixed_ms) / d.eval.main_ms:.1f} %: that is the time saved, "
               f"not the rate gained (the lecture's 52.96 -> 49.63 ms is +6.7 % tok/s and -6.3 % time)."),
    to=0.1,
    hint="tok/s is 1000 / (ms per token): the gain in rate is main's ms over fixed's ms, minus one, as a percent -- "
         "not the time saved over main's time.",
    recorded=lambda: (onebinary.recorded(),)))

register(Exercise(
    "06.floor_at_bench", "does LAUNCHLAB_MLA_FLOOR change any launch the bench makes at ctx 2,048? 'yes' or 'no'",
    lambda d: "yes" if splits.split(d.short_ctx + d.bench.long, 16, 1, "hardcoded").splits
                       != splits.split(d.short_ctx + d.bench.long, 16, 1, "derived").splits else "no",
    lambda d: (f"at and below {splits.SPLIT_MIN_CTX:,} tokens no split happens under either floor: the bench's "
               f"positions {d.short_ctx:,}..{d.short_ctx + d.bench.long - 1:,} launch one slice per head tile either "
               f"way, so the gate changes nothing there. Its {d.gate('MLA_FLOOR').cost_ms:.2f} ms per token of eval "
               f"at {d.ctx:,} is missing from the bench's gain ({d.bench_gain_pct:+.1f} % against eval's "
               f"{d.eval_gain_pct:+.1f} %): the instruments disagree because they read different contexts."),
    kind="choice", choices=("yes", "no"),
    hint="below which context does the MLA planner split at all? Compare the bench's positions with it: a floor "
         "on the split count changes nothing where there is one split either way.",
    recorded=lambda: (onebinary.recorded(),),
    shown_by=(r"ctx\s+2,048:\s+grid", r"changes no launch the bench")))


# ------------------------------------------------------------------ the your-turn launch (turn.py)
def _reps(xs) -> str:
    return ", ".join(f"{x:.3f}" for x in xs)


def _abba_512():
    return turn.recorded().at(shape(1, 512)).abba


register(Exercise(
    "06.turn_ratio_512", "B/A of the RMS norm's ABBA at a block of 512 (B the widened arm, A the original 128 "
                         "threads) on the H200",
    lambda: _abba_512().ratio(),
    lambda: (lambda ab: f"The H200's ABBA at 512: A {_reps(ab.medians('A'))} µs, B {_reps(ab.medians('B'))} µs (per rep, in the "
                        f"order they ran {''.join(ab.order)}): median B / median A = {ab.ratio():.3f}.")(_abba_512()),
    to=0.01, within_pct=3,
    hint="run the ABBA at 512 in the cell above and divide the median of B's reps by the median of A's (B over A: "
         "below 1 when the widened arm is faster)."))


TRANSFER_A, TRANSFER_B = (52.5, 52.1, 52.3), (47.6, 48.1, 47.9)


transfer.mark(register(Exercise(
    "06.transfer_abba_ratio", "an ABBA of three pairs on another GPU gave arm A reps of 52.5, 52.1, 52.3 µs and arm B "
                              "47.6, 48.1, 47.9 µs: B/A from the arms' medians",
    lambda: statistics.median(TRANSFER_B) / statistics.median(TRANSFER_A),
    lambda: "The medians are 52.3 µs (A) and 47.9 µs (B): B/A = 0.916, B about 8 % faster. Every B rep is "
            "below every A rep, and the reps of an arm agree to within 0.5 µs, so the gap is not noise.",
    to=0.01,
    hint="take each arm's median (the middle of its three reps, not the mean), then B's over A's.")),
    "a measurement the course did not make")
