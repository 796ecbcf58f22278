"""An exercise: a question a learner answers in a notebook cell, with how its answer is computed and why.

A section declares its exercises in its own folder (`register(Exercise(...))` in its exercises module, named
"<notebook>.<name>"); the exercises' checker (launchlab.faces.exercises) grades an answer against them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Exercise:
    key: str
    prompt: str                                   # what to answer, with its unit
    expected: Callable[..., object]               # (*context) -> the right answer
    why: Callable[..., str]                       # (*context) -> the reasoning, shown with every verdict
    kind: str = "number"                          # "number", "choice" or "written"
    rel_tol: float = 0.0                          # numbers: accepted relative error
    abs_tol: float = 0.0                          # numbers: accepted absolute error (e.g. percentage points)
    choices: tuple[str, ...] = ()
    points: tuple = ()                            # written: ((label, (pattern, ...)), ...) -- the key points


EXERCISES: dict[str, Exercise] = {}


def register(e: Exercise) -> Exercise:
    if e.key in EXERCISES:
        raise ValueError(f"exercise {e.key} registered twice")
    if e.kind not in ("number", "choice", "written") or (e.kind == "choice") != bool(e.choices):
        raise ValueError(f"{e.key}: a choice exercise needs choices, a number or written one none")
    if (e.kind == "written") != bool(e.points):
        raise ValueError(f"{e.key}: a written exercise needs key points, the others none")
    EXERCISES[e.key] = e
    return e
