"""An exercise: a question a learner answers in a notebook cell, with how its answer is computed and why, and
the verdict on one answer (`grade`).

A section declares its exercises in its own folder (`register(Exercise(...))` in its exercises module, named
"<notebook>.<name>"); the exercises' checker (launchlab.faces.exercises) prints the feedback in a notebook.

A number or a choice gets a verdict on the spot, against the value computed from the same data the notebook
shows. A written answer gets none: no pattern can tell a right explanation from a wrong one in other words
(or a wrong one that happens to contain the right words), so once the learner has written, the key points are
shown as a checklist to assess the answer against, with the model answer. `verdicts_on_prose()` counts the
written exercises that would get a right/wrong verdict all the same (summary --json: 10.prose_auto_verdicts).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
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
    points: tuple[str, ...] = ()                  # written: the key points a good answer makes (a checklist)
    recorded: Callable[[], tuple] | None = None   # the context from the H200 recordings (what replay passes)
    shown_by: tuple[str, ...] = ()                # regexes of printed output that would state the answer: the
                                                  # question must come before any cell printing one


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


@dataclass
class Feedback:
    key: str
    status: str                                   # "blank", "invalid", "right", "wrong"; written: "self-assess"
    text: str
    expected: object = field(default=None, repr=False)

    @property
    def correct(self) -> bool:
        return self.status == "right"

    def __str__(self) -> str:
        return self.text

    MARKS = {"right": ("✓", "Right", "#2e7d32"), "wrong": ("✗", "Not quite", "#c62828"),
             "blank": ("○", "Not answered yet", "#616161"), "invalid": ("!", "Check the form of your answer",
                                                                       "#e65100"),
             "self-assess": ("✎", "Your answer is written down: assess it yourself", "#1565c0")}

    def html(self) -> str:
        """The feedback as a notebook shows it: the verdict with its mark and colour on its own line, then the
        explanation (and, for a written answer, the checklist and the model answer) apart, in the page's font,
        wrapping at word boundaries."""
        from html import escape
        mark, word, colour = self.MARKS.get(self.status, ("•", self.status, "#424242"))
        lines = self.text.split("\n")
        head = lines[0].replace(f"[{self.key}] ", "", 1)
        for prefix in ("right: ", "not quite: ", "not answered yet: "):
            if head.startswith(prefix):
                head = head[len(prefix):]
        rest, checklist = [], []
        for ln in lines[1:]:
            t = ln.strip()
            if t.startswith("[ ] "):
                checklist.append(f"<li>{escape(t[4:])}</li>")
            elif t:
                rest.append(escape(t))
        body = "".join(f"<p style='margin:4px 0'>{r}</p>" for r in rest)
        if checklist:
            body = f"<ul style='margin:4px 0 4px 18px;list-style:\"☐ \"'>{''.join(checklist)}</ul>" + body
        return (f"<div class='launchlab-feedback' style='border-left:4px solid {colour};padding:4px 10px;"
                f"margin:6px 0;white-space:normal;overflow-wrap:break-word'>"
                f"<div><b style='color:{colour}'>{mark} {word}</b> <span style='color:#616161'>[{escape(self.key)}]"
                f"</span></div><p style='margin:4px 0'>{escape(head)}</p>{body}</div>")

    def _repr_html_(self) -> str:
        return self.html()


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
        checklist = "\n".join(f"  [ ] {point}" for point in e.points)
        return Feedback(key, "self-assess",
                        f"[{key}] your answer is written down. No machine grades prose here: check it yourself "
                        f"against the key points a good answer makes --\n{checklist}\n  The model answer: {want}\n"
                        f"  Why: {e.why(*context)}", want)
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


def verdicts_on_prose(answers=("I do not know.", "contention spread floor head main overhead remains")) -> int:
    """How many written exercises give a right/wrong verdict to their own model answer or to any of `answers`
    (both a blank guess and a string of the key points' words): 0 when prose is never machine-graded."""
    n = 0
    for e in EXERCISES.values():
        if e.kind == "written":
            tried = [e.expected()] + list(answers)
            n += any(grade(e.key, a).status in ("right", "wrong") for a in tried)
    return n
