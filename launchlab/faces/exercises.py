"""Exercises: the learner answers in a cell, the next cell checks the answer and explains it.

Convention (the lab and the self-check build on it):

    # cell tagged `exercise`                      # cell tagged `check`
    my_blocks_per_wave = None   # your answer     exercises.check("01.blocks_per_wave", my_blocks_per_wave)

`check(key, answer, *context)` prints one `Feedback` (`grade()` returns it, for the lab's scoring): "not answered yet" for None (so a blank notebook runs
clean under nbval), "not a number" for the wrong kind of answer, or right/wrong with the reason -- computed
from the same data the notebook shows (`context`: the section's recorded or live result), never a traceback.
The answer it expects is computed, not typed in: in live mode a predict-then-measure exercise is scored
against what the GPU measured a moment ago.

Every exercise is declared in its section's folder (launchlab.core.exercise.register, key "<notebook>.<name>")
and known here through the registry (launchlab.sections); tests/test_exercises.py checks that each has
a right, a wrong and a blank answer handled, and that every notebook cell tagged `check` names one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from launchlab import sections
from launchlab.core.exercise import EXERCISES

sections.all()          # every registered section's exercises, declared by the modules its manifest names


@dataclass
class Feedback:
    key: str
    status: str                                   # "blank", "invalid", "right" or "wrong"
    text: str
    expected: object = field(default=None, repr=False)

    @property
    def correct(self) -> bool:
        return self.status == "right"

    def __str__(self) -> str:
        return self.text


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def grade(key: str, answer, *context) -> Feedback:
    """The verdict on one answer, without printing it."""
    e = EXERCISES.get(key)
    if e is None:
        return Feedback(key, "invalid", f"[{key}] no such exercise (known: {', '.join(sorted(EXERCISES))})")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Feedback(key, "blank", f"[{key}] not answered yet: {e.prompt}. Write your answer in the cell above "
                                      f"and run both cells again.")
    want = e.expected(*context)
    if e.kind == "written":
        if not isinstance(answer, str):
            return Feedback(key, "invalid", f"[{key}] write the answer as text (a string in quotes): {e.prompt}.",
                            want)
        hit, missed = covered(answer, e.points)
        ok = not missed
        head = (f"[{key}] all {len(hit)} key points covered" if ok else
                f"[{key}] {len(hit)} of {len(e.points)} key points covered; missing: " + "; ".join(missed))
        if hit and not ok:
            head += "\n  covered: " + "; ".join(hit)
        return Feedback(key, "right" if ok else "wrong",
                        f"{head}.\n  The model answer: {want}\n  Why: {e.why(*context)}", want)
    if e.kind == "number":
        if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
            return Feedback(key, "invalid", f"[{key}] {answer!r} is not a number: {e.prompt}.", want)
        tol = max(e.abs_tol, e.rel_tol * abs(float(want)))
        ok = abs(float(answer) - float(want)) <= tol
        off = "" if float(want) == 0 else f" ({float(answer) / float(want):.2f}x the answer)"
        head = (f"[{key}] right: {_fmt(answer)}" if ok else
                f"[{key}] not quite: you wrote {_fmt(answer)}, the answer is {_fmt(want)}{off}")
        if tol and ok:
            head += f" (the answer is {_fmt(want)}; accepted within {_fmt(tol)})"
    else:
        a = str(answer).strip().lower()
        if a not in e.choices:
            return Feedback(key, "invalid", f"[{key}] {answer!r} is not one of {', '.join(map(repr, e.choices))}.",
                            want)
        ok = a == want
        head = f"[{key}] right: {a!r}" if ok else f"[{key}] not quite: you chose {a!r}, the answer is {want!r}"
    return Feedback(key, "right" if ok else "wrong", f"{head}.\n  Why: {e.why(*context)}", want)


def covered(answer: str, points) -> tuple[list[str], list[str]]:
    """Which key points a written answer covers: a point counts when any of its patterns occurs (regular
    expressions, case-insensitive). Returns (covered labels, missing labels)."""
    import re
    hit, missed = [], []
    for label, patterns in points:
        (hit if any(re.search(p, answer, re.I) for p in patterns) else missed).append(label)
    return hit, missed


def check(key: str, answer, *context) -> None:
    """Grade one answer and print the feedback: the `check` cell's whole output (grade() returns it instead)."""
    print(grade(key, answer, *context).text)
