"""An exercise: a question a learner answers in a notebook cell, with how its answer is computed and why, and
the verdict on one answer (`grade`).

A section declares its exercises in its own folder (`register(Exercise(...))` in its exercises module, named
"<notebook>.<name>"); the exercises' checker (launchlab.faces.exercises) prints the feedback in a notebook.

A number or a choice gets a verdict on the spot, against the value computed from the same data the notebook
shows. A wrong one first gets what is wrong (too high, a factor of 1,000 off, the ratio the other way round, not a
whole number of warps ...) and the exercise's hint, never the number; the key and the why come with a right
answer, a second different wrong one (`reveal`) or on asking. A number's tolerance is the precision its question
asks for (`precision()`, stated in the question): half its rounding step (`to`), or a stated band for a measured
or predicted value (`within_pct` of the answer, `within_abs` in the question's unit); every answer is quoted as
the learner wrote it, the key at the precision asked.

A written answer gets none: no pattern can tell a right explanation from a wrong one in other words
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
    why: Callable[..., str]                       # (*context) -> the reasoning, shown with the key
    kind: str = "number"                          # "number", "choice" or "written"
    hint: str = ""                                # numbers and choices: what to look at again (never the answer)
    to: float = 0.0                               # numbers: the rounding step asked (0.01: two decimals); 0: exact
    within_pct: float = 0.0                       # numbers: a measured or predicted value, accepted within this %
    within_abs: float = 0.0                       # ... or within this much, in `unit`
    unit: str = ""                                # the unit of within_abs ("percentage points")
    multiple_of: int = 0                          # numbers: the answer must be a multiple (32: whole warps)
    choices: tuple[str, ...] = ()
    points: tuple[str, ...] = ()                  # written: the key points a good answer makes (a checklist)
    recorded: Callable[[], tuple] | None = None   # the context from the H200 recordings (what replay passes)
    shown_by: tuple[str, ...] = ()                # regexes of printed output that would state the answer: the
                                                  # question must come before any cell printing one

    def tolerance(self, want: float) -> float:
        """The error accepted around `want`: the largest of half the rounding step and the stated bands."""
        return max(self.to / 2, self.within_pct / 100 * abs(want), self.within_abs)

    def precision(self) -> str:
        """The precision the question asks for, in the words its notebook states it ('' for an exact count)."""
        said = []
        if self.to:
            d = _decimals(self.to)
            said.append("to the nearest whole number" if self.to == 1 else
                        f"to {d} decimal{'s' if d > 1 else ''}" if 10.0 ** -d == self.to else f"to the nearest {self.to:g}")
        if self.within_pct:
            said.append(f"within {self.within_pct:g} %")
        if self.within_abs:
            said.append(f"within {self.within_abs:g} {self.unit}".rstrip())
        if self.multiple_of:
            said.append(f"a multiple of {self.multiple_of}")
        return ", ".join(said)

    def shown(self, want) -> str:
        """The key as the feedback writes it: at the precision the question asks for."""
        if isinstance(want, float) and self.to:
            return f"{want:,.{_decimals(self.to)}f}"
        return _fmt(want)


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step) + 1e-9))


EXERCISES: dict[str, Exercise] = {}


def register(e: Exercise) -> Exercise:
    if e.key in EXERCISES:
        raise ValueError(f"exercise {e.key} registered twice")
    if e.kind not in ("number", "choice", "written") or (e.kind == "choice") != bool(e.choices):
        raise ValueError(f"{e.key}: a choice exercise needs choices, a number or written one none")
    if (e.kind == "written") != bool(e.points):
        raise ValueError(f"{e.key}: a written exercise needs key points, the others none")
    if (e.kind == "written") == bool(e.hint):
        raise ValueError(f"{e.key}: a number or a choice needs a hint for a first wrong answer, a written one none")
    if e.kind != "number" and (e.to or e.within_pct or e.within_abs or e.multiple_of):
        raise ValueError(f"{e.key}: only a number has a precision")
    if e.within_abs and not e.unit:
        raise ValueError(f"{e.key}: say the unit of within_abs")
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
             "self-assess": ("✎", "Your answer is written down: assess it yourself", "#1565c0"),
             "shown": ("→", "The answer", "#1565c0")}

    def html(self) -> str:
        """The feedback as a notebook shows it: the verdict with its mark and colour on its own line, then the
        explanation (and, for a written answer, the checklist and the model answer) apart, in the page's font,
        wrapping at word boundaries."""
        from html import escape
        mark, word, colour = self.MARKS.get(self.status, ("•", self.status, "#424242"))
        lines = self.text.split("\n")
        head = lines[0].replace(f"[{self.key}] ", "", 1)
        for prefix in ("right: ", "not quite: ", "not answered yet: ", "the answer: "):
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


def said(answer) -> str:
    """A number as the learner wrote it (7812.5 -> '7,812.5', 0.92 -> '0.92'): never rounded."""
    return f"{answer:,}" if isinstance(answer, (int, float)) and not isinstance(answer, bool) else repr(answer)


_FACTORS = ((1000, "a factor of 1,000 off: check the unit (ns, µs, ms; B, KB, MB)"),
            (100, "a factor of 100 off: a percent written as a fraction, or the other way round"),
            (10, "a factor of 10 off: check a unit or a digit"))


def what_is_wrong(e: Exercise, answer: float, want: float) -> str:
    """What a wrong number gets wrong, without the number: the form the question asks for, a unit slip, a ratio
    taken the other way round, close but outside the precision, or simply too high or too low."""
    a, w, tol = float(answer), float(want), e.tolerance(float(want))
    if e.multiple_of and a % e.multiple_of:
        return f"{said(answer)} is not a multiple of {e.multiple_of}: the question asks for {e.precision()}"
    if w and a and (a > 0) == (w > 0):
        for f, say in _FACTORS:
            for r in (f, 1 / f):
                if abs(a / (w * r) - 1) <= 0.05:
                    return say
        if abs(1 / a - w) <= max(tol, 0.01 * abs(w)) and abs(w - 1) > 0.05:
            return "that is the ratio the other way round: check which time the question divides by which"
    if isinstance(want, int) and not e.to and a != int(a):
        return f"{said(answer)} is not a whole number, and the answer is a count"
    side = "too high" if a > w else "too low"
    if tol and abs(a - w) <= 3 * tol:
        return f"close, but {side} for the precision the question asks ({e.precision()})"
    return side


def grade(key: str, answer, *context, reveal: bool = True) -> Feedback:
    """The verdict on one answer, without printing it. A wrong number or choice with `reveal` False gets what is
    wrong and the hint, not the key (the checker passes False on a learner's first wrong answer)."""
    e = EXERCISES.get(key)
    if e is None:
        return Feedback(key, "invalid", f"[{key}] no such exercise (known: {', '.join(sorted(EXERCISES))})")
    asked = f"{e.prompt} ({e.precision()})" if e.precision() else e.prompt
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Feedback(key, "blank", f"[{key}] not answered yet: {asked}. Write your answer in the cell above "
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
            return Feedback(key, "invalid", f"[{key}] {answer!r} is not a number: {asked}.", want)
        tol = e.tolerance(float(want))
        ok = abs(float(answer) - float(want)) <= tol * (1 + 1e-9) and not (e.multiple_of and answer % e.multiple_of)
        if ok:
            head = f"[{key}] right: {said(answer)}"
            if tol:
                head += f" (the answer is {e.shown(want)}; {e.precision()} is accepted)"
        elif reveal:
            head = f"[{key}] not quite: you wrote {said(answer)}, the answer is {e.shown(want)}"
        else:
            return Feedback(key, "wrong", f"[{key}] not quite: you wrote {said(answer)}: "
                                          f"{what_is_wrong(e, answer, want)}.\n  Hint: {e.hint}\n  {_AGAIN}", want)
    else:
        a = str(answer).strip().lower()
        if a not in e.choices:
            return Feedback(key, "invalid", f"[{key}] {answer!r} is not one of {', '.join(map(repr, e.choices))}.",
                            want)
        ok = a == want
        if not ok and not reveal:
            return Feedback(key, "wrong", f"[{key}] not quite: not {a!r}.\n  Hint: {e.hint}\n  {_AGAIN}", want)
        head = f"[{key}] right: {a!r}" if ok else f"[{key}] not quite: you chose {a!r}, the answer is {want!r}"
    return Feedback(key, "right" if ok else "wrong", f"{head}.\n  Why: {e.why(*context)}", want)


_AGAIN = ("Change your answer and run both cells again: the answer and the why come with a right answer, a second "
          "wrong one, or exercises.show_answer(key).")


def answer(key: str, *context) -> Feedback:
    """The key and the why, asked for (the checker's `show_answer`)."""
    e = EXERCISES.get(key)
    if e is None:
        return Feedback(key, "invalid", f"[{key}] no such exercise (known: {', '.join(sorted(EXERCISES))})")
    want = e.expected(*context)
    shown = e.shown(want) if e.kind == "number" else want if e.kind == "written" else repr(want)
    return Feedback(key, "shown", f"[{key}] the answer: {shown}.\n  Why: {e.why(*context)}", want)


def verdicts_on_prose(answers=("I do not know.", "contention spread floor head main overhead remains")) -> int:
    """How many written exercises give a right/wrong verdict to their own model answer or to any of `answers`
    (both a blank guess and a string of the key points' words): 0 when prose is never machine-graded."""
    n = 0
    for e in EXERCISES.values():
        if e.kind == "written":
            tried = [e.expected()] + list(answers)
            n += any(grade(e.key, a).status in ("right", "wrong") for a in tried)
    return n
