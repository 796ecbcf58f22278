"""§6's exercises."""
from __future__ import annotations

from launchlab.core.exercise import Exercise, register
from launchlab.kernels import splits
from launchlab.sections.s06_one_binary import onebinary


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
    abs_tol=0.15,
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
    recorded=lambda: (onebinary.recorded(),),
    shown_by=(r"ctx\s+2,048:\s+grid", r"changes no launch the bench")))
