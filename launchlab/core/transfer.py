"""Exercises that transfer: a question moved to a GPU, a shape or a context that no notebook shows (an A100's 108
SMs, an L4's 58, a 16-SM slice, a row width never launched), so that its answer is printed nowhere in the course
and has to be worked out. A section marks its own (`mark(register(Exercise(...)), what)`); tests/test_hands.py
checks that no committed notebook prints their answers, and `summary --json` counts them (hands.transfer_exercises).
"""
from __future__ import annotations

TRANSFER: dict[str, str] = {}        # exercise key -> what the question moves to, in words


def mark(e, what: str):
    """Mark a registered exercise as one that transfers; returns it."""
    if len(what.strip()) < 10:
        raise ValueError(f"{e.key}: say what the question moves to (a GPU, a shape, a context)")
    TRANSFER[e.key] = what
    return e
