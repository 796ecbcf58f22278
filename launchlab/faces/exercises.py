"""Exercises: the learner answers in a cell, the next cell checks the answer and explains it.

Convention (the lab and the self-check build on it):

    # cell tagged `exercise`                      # cell tagged `check`
    my_blocks_per_wave = None   # your answer     exercises.check("01.blocks_per_wave", my_blocks_per_wave)

`check(key, answer, *context)` prints one `Feedback` (`grade()` returns it, for the lab's scoring): "not
answered yet" for None (so a blank notebook runs clean under nbval), "not a number" for the wrong kind of
answer, right/wrong for a number or a choice -- computed from the same data the notebook shows (`context`: the
section's recorded or live result), never a traceback -- and, for a written answer, no verdict: the key points
as a checklist to assess it against, and the model answer (launchlab.core.exercise). Tries: a first wrong answer
gets what is wrong and a hint; the key and the why come with a right answer, with a second wrong answer that
differs from the first (running the same cell again is not a try), or with `show_answer(key, *context)`.
The answer it expects is computed, not typed in: in live mode a predict-then-measure exercise is scored
against what the GPU measured a moment ago.

Every exercise is declared in its section's folder (launchlab.core.exercise.register, key "<notebook>.<name>")
and known here through the registry (launchlab.sections); tests/test_exercises.py checks that each has
a right, a wrong and a blank answer handled, and that every notebook cell tagged `check` names one.
"""
from __future__ import annotations

from launchlab import sections
from launchlab.core.exercise import EXERCISES, Feedback, answer, grade

__all__ = ["EXERCISES", "Feedback", "check", "grade", "show_answer"]

sections.all()          # every registered section's exercises, declared by the modules its manifest names


WRONG: dict[str, set] = {}          # this kernel's wrong answers, per exercise (two different ones show the key)


def check(key: str, given, *context) -> None:
    """Grade one answer and show the feedback, the `check` cell's whole output (grade() returns it instead): in
    a notebook as HTML (the verdict marked, the explanation apart) with the plain text beside it, elsewhere the
    plain text."""
    fb = grade(key, given, *context, reveal=False)
    if fb.status == "wrong":
        tried = WRONG.setdefault(key, set())
        tried.add(given if isinstance(given, (int, float)) else str(given).strip().lower())
        if len(tried) >= 2:
            fb = grade(key, given, *context, reveal=True)
    _show(fb)


def show_answer(key: str, *context) -> None:
    """The key and the why, without answering (the same context as the exercise's check cell)."""
    _show(answer(key, *context))


def _show(fb: Feedback) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
        if get_ipython() is not None:
            display({"text/html": fb.html(), "text/plain": fb.text}, raw=True)
            return
    except ImportError:
        pass
    print(fb.text)
