"""§11's exercises: answers computed from the recording, never typed in."""
from __future__ import annotations

from launchlab.core.exercise import Exercise, register
from launchlab.sections.s11_audit import realmodels


def _gemv(d):
    """The Llama-style step's largest offender that has a floor."""
    return next(f for f in d.model("llama").floors if f.has_floor)


register(Exercise(
    "11.top_offender_verdict", "the Llama-style step's largest offender by idle SM-time that step 4 could measure: "
                               "'starvation', 'bandwidth-bound', 'contention' or 'unclear'?",
    lambda d: _gemv(d).verdict,
    lambda d: (lambda f: f"{f.shape.blocks} blocks on {f.shape.sm_count} SMs looks starved, but ncu measured "
                         f"{f.bytes_per_call / 1e6:,.1f} MB a call in {f.median_us:.1f} µs cold against a "
                         f"{f.floor_us:.1f} µs floor ({f.ratio:.2f}x): {f.verdict}. Blocks ÷ SMs is the first cut; "
                         f"the floor decides.")(_gemv(d)),
    kind="choice", choices=("starvation", "bandwidth-bound", "contention", "unclear"),
    hint="blocks ÷ SMs is only the first cut: compare the offender's cold median with its floor (ncu's bytes over "
         "the copy ceiling). Near its floor, a small grid is not what holds it back.",
    recorded=lambda: (realmodels.recorded(),),
    shown_by=(r"(STARVATION|BANDWIDTH-BOUND|CONTENTION|UNCLEAR) -- [\d.,]+ MB a call",)))


def _beats(at) -> bool:
    return max(at.b_us) < min(at.a_us)


register(Exercise(
    "11.fix_helps_short", "at the audit's own context, does every rep with SDPA limited to the other backend beat "
                          "every rep with torch's choice? 'yes' or 'no'",
    lambda d: "yes" if _beats(d.fix.at[0]) else "no",
    lambda d: (lambda a: f"at ctx {a.ctx:,}: torch's choice {min(a.a_us):.0f}-{max(a.a_us):.0f} µs a step, the "
                         f"other backend {min(a.b_us):.0f}-{max(a.b_us):.0f} µs ({a.gain:+.1%} on the median).")(
        d.fix.at[0]),
    kind="choice", choices=("yes", "no"),
    hint="compare the slowest rep of the other backend with the fastest rep of torch's choice at the first context, "
         "not their medians.",
    recorded=lambda: (realmodels.recorded(),),
    shown_by=(r"ABBA at ctx [\d,]+: A ",)))
