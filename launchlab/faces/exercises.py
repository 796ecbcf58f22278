"""Exercises: the learner answers in a cell, the next cell checks the answer and explains it.

Convention (the lab and the self-check build on it):

    # cell tagged `exercise`                      # cell tagged `check`
    my_blocks_per_wave = None   # your answer     exercises.check("01.blocks_per_wave", my_blocks_per_wave)

`check(key, answer, *context)` prints one `Feedback` (`grade()` returns it, for the lab's scoring): "not
answered yet" for None (so a blank notebook runs clean under nbval), "not a number" for the wrong kind of
answer, right/wrong with the reason for a number or a choice -- computed from the same data the notebook shows
(`context`: the section's recorded or live result), never a traceback -- and, for a written answer, no
verdict: the key points as a checklist to assess it against, and the model answer (launchlab.core.exercise).
The answer it expects is computed, not typed in: in live mode a predict-then-measure exercise is scored
against what the GPU measured a moment ago.

Every exercise is declared in its section's folder (launchlab.core.exercise.register, key "<notebook>.<name>")
and known here through the registry (launchlab.sections); tests/test_exercises.py checks that each has
a right, a wrong and a blank answer handled, and that every notebook cell tagged `check` names one.
"""
from __future__ import annotations

from launchlab import sections
from launchlab.core.exercise import EXERCISES, Feedback, grade

__all__ = ["EXERCISES", "Feedback", "check", "grade"]

sections.all()          # every registered section's exercises, declared by the modules its manifest names


def check(key: str, answer, *context) -> None:
    """Grade one answer and show the feedback, the `check` cell's whole output (grade() returns it instead): in
    a notebook as HTML (the verdict marked, the explanation apart) with the plain text beside it, elsewhere the
    plain text."""
    fb = grade(key, answer, *context)
    try:
        from IPython import get_ipython
        from IPython.display import display
        if get_ipython() is not None:
            display({"text/html": fb.html(), "text/plain": fb.text}, raw=True)
            return
    except ImportError:
        pass
    print(fb.text)
