"""The exercise convention: every registered exercise answers blank, wrong, invalid and right answers with an
explanation (never a traceback), and every section notebook has at least two exercises wired to it."""
import ast
import json
from pathlib import Path

import pytest

from launchlab import sections
from launchlab.faces import exercises

ROOT = Path(__file__).resolve().parent.parent
# every section with exercises, as its notebooks' names (a section in parts, 02a and 02b, is read as one)
SECTIONS = tuple(tuple(n[:-len(".ipynb")] for n in s.notebooks) for s in sections.all() if s.key not in ("00", "09"))


def context(key):
    """The replay context an exercise declares (Exercise.recorded): what the notebook passes in replay."""
    e = exercises.EXERCISES[key]
    return e.recorded() if e.recorded else ()


@pytest.mark.parametrize("key", sorted(exercises.EXERCISES))
def test_every_answer_gets_feedback_not_a_traceback(key):
    e, ctx = exercises.EXERCISES[key], context(key)
    want = e.expected(*ctx)
    right = exercises.grade(key, want, *ctx)
    if e.kind == "written":                   # no verdict on prose: the checklist and the model answer, always
        for answer in (want, "I do not know."):
            fb = exercises.grade(key, answer, *ctx)
            assert fb.status == "self-assess" and not fb.correct, fb.text
            assert all(f"[ ] {p}" in fb.text for p in e.points) and "The model answer" in fb.text
            assert "right" not in fb.text.split("\n")[0] and "Why:" in fb.text
    else:
        assert right.correct and "Why:" in right.text
        wrong_answer = (float(want) * 3 + 7 if e.kind == "number" else next(c for c in e.choices if c != want))
        wrong = exercises.grade(key, wrong_answer, *ctx)
        assert wrong.status == "wrong" and "the answer is" in wrong.text and "Why:" in wrong.text
    assert exercises.grade(key, None, *ctx).status == "blank"
    assert exercises.grade(key, "   ", *ctx).status == "blank"
    odd = exercises.grade(key, {"number": "lots", "choice": "maybe", "written": 42}[e.kind], *ctx)
    assert odd.status == "invalid" and "Why" not in odd.text and "model answer" not in odd.text   # not given away


def test_tolerances_accept_a_near_answer_and_say_so():
    ctx = context("03.floor_main")
    want = exercises.EXERCISES["03.floor_main"].expected(*ctx)
    fb = exercises.grade("03.floor_main", want * 1.02, *ctx)
    assert fb.correct and "accepted within" in fb.text
    assert not exercises.grade("03.floor_main", want * 1.10, *ctx).correct


def test_an_unknown_key_is_reported_not_raised():
    assert exercises.grade("99.nothing", 1).status == "invalid"


def _cells(names):
    return [c for n in ((names,) if isinstance(names, str) else names)
            for c in json.loads((ROOT / "notebooks" / f"{n}.ipynb").read_text())["cells"]]


@pytest.mark.parametrize("name", SECTIONS, ids=[n[0][:3] for n in SECTIONS])
def test_each_section_notebook_has_two_exercises_each_checked(name):
    cells = _cells(name)
    ex = [c for c in cells if "exercise" in c["metadata"].get("tags", [])]
    ck = [c for c in cells if "check" in c["metadata"].get("tags", [])]
    assert len(ex) >= 2 and len(ck) >= len(ex), name
    for c in ex:                                   # committed blank: every answer variable is None
        tree = ast.parse("".join(c["source"]))
        assert all(isinstance(n.value, ast.Constant) and n.value.value is None
                   for n in tree.body if isinstance(n, ast.Assign)), "".join(c["source"])
    for c in ck:
        src = "".join(c["source"])
        keys = [n.args[0].value for n in ast.walk(ast.parse(src))
                if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "check"]
        assert keys and all(k in exercises.EXERCISES and k.startswith(name[0][:2]) for k in keys), src
        out = "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                      for o in c["outputs"])
        assert out.count("not answered yet") == len(keys), out


def test_prose_gets_no_machine_verdict_whatever_its_words():
    """The old checker's failures (issue 25): key words strung together passed, a good answer in other words
    failed. Now neither gets a verdict; the learner sees the checklist and the model answer."""
    for key, answer in (("10.q1_ruled_out", "contention spread floor"),
                        ("10.q2_two_ways", "Widen the grid to 132 blocks"),
                        ("10.q2_two_ways", "Give the block 1,024 threads so more loads are outstanding; load float4")):
        assert exercises.grade(key, answer).status == "self-assess"
    from launchlab.core import exercise
    assert exercise.verdicts_on_prose() == 0


def test_the_prose_count_sees_a_checker_that_grades_prose(monkeypatch):
    from launchlab.core import exercise
    real = exercise.grade

    def keyword_grader(key, answer, *context):
        fb = real(key, answer, *context)
        if fb.status == "self-assess":
            fb.status = "right" if "contention" in str(answer) else "wrong"
        return fb
    monkeypatch.setattr(exercise, "grade", keyword_grader)
    assert exercise.verdicts_on_prose() == sum(e.kind == "written" for e in exercises.EXERCISES.values())


def test_the_self_check_key_fixes_what_it_got_wrong():
    """q1 rules arithmetic out by its own floor, not by the bandwidth ratio; q2 does not say float4 raises the
    bytes in flight (notebook 02 shows it does not at 128 threads)."""
    q1, q2 = exercises.EXERCISES["10.q1_ruled_out"], exercises.EXERCISES["10.q2_two_ways"]
    assert "not by the bandwidth ratio" in " ".join(q1.points) and "second floor" in q1.expected()
    assert "does not raise the bytes in flight" in q2.expected()


def test_every_registered_exercise_is_used_by_its_notebook():
    used = set()
    for name in SECTIONS:
        for c in _cells(name):
            if "check" in c["metadata"].get("tags", []):
                used |= {k for k in exercises.EXERCISES if f'"{k}"' in "".join(c["source"])}
    assert used == set(exercises.EXERCISES)


def test_feedback_is_html_with_a_verdict_mark_and_the_explanation_apart():
    """JupyterLab wrapped the monospace feedback mid-word and "right" looked like "not quite" (issue 26)."""
    ctx = context("03.floor_main")
    want = exercises.EXERCISES["03.floor_main"].expected(*ctx)
    right, wrong = exercises.grade("03.floor_main", want, *ctx), exercises.grade("03.floor_main", 9.0, *ctx)
    blank = exercises.grade("03.floor_main", None, *ctx)
    for fb, mark in ((right, "✓ Right"), (wrong, "✗ Not quite"), (blank, "○ Not answered yet")):
        h = fb.html()
        assert mark in h and "white-space:normal" in h and "<pre" not in h, h
    assert right.html().count("<p") >= 2                       # the verdict, then the reason apart
    assert "#2e7d32" in right.html() and "#c62828" in wrong.html()
    written = exercises.grade("10.q1_ruled_out", "it is starved", *context("10.q1_ruled_out"))
    assert "✎" in written.html() and written.html().count("<li>") == len(exercises.EXERCISES["10.q1_ruled_out"].points)


def test_the_ratio_question_does_not_answer_the_diagnosis_question():
    why = exercises.grade("10.q1_ratio", 96.7).text.lower()
    assert "starv" not in why and "96.7" in why
