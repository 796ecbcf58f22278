"""exercise.grade word for word on exercises made here, with answers worked out by hand (issue 27: mutation
testing): numbers inside and outside their tolerances on both sides and at zero, choices, written answers, the
refusals, the HTML a notebook shows, and the count of prose given a machine verdict."""
import pytest

from launchlab.core import exercise
from launchlab.core.exercise import Exercise, Feedback


@pytest.fixture
def made(monkeypatch):
    monkeypatch.setattr(exercise, "EXERCISES", {})
    reg = exercise.register
    reg(Exercise("t.n", "the blocks per wave (blocks)", lambda k=1: 1056 * k, lambda k=1: f"132 x 8 x {k}",
                 hint="SMs x blocks per SM"))
    reg(Exercise("t.rel", "a time (µs)", lambda: 2.0, lambda: "measured", within_pct=5, hint="time it"))
    reg(Exercise("t.abs", "a share (%)", lambda: 40.0, lambda: "by hand", within_abs=1.0, unit="points",
                 within_pct=1, hint="divide"))
    reg(Exercise("t.zero", "a count", lambda: 0, lambda: "none", hint="count them"))
    reg(Exercise("t.c", "which", lambda: "starvation", lambda: "tight and far", kind="choice",
                 choices=("starvation", "contention"), hint="far and tight"))
    reg(Exercise("t.w", "explain", lambda: "the model answer", lambda: "because", kind="written",
                 points=("a point", "another point")))
    return exercise.EXERCISES


def test_register_refuses_a_twice_a_bad_kind_and_mismatched_choices_or_points(made):
    e = made["t.n"]
    with pytest.raises(ValueError) as x:
        exercise.register(e)
    assert str(x.value) == "exercise t.n registered twice"
    for kw, msg in ((dict(kind="essay"), "a choice exercise needs choices, a number or written one none"),
                    (dict(kind="choice"), "a choice exercise needs choices, a number or written one none"),
                    (dict(choices=("a",)), "a choice exercise needs choices, a number or written one none"),
                    (dict(kind="written"), "a written exercise needs key points, the others none"),
                    (dict(points=("p",)), "a written exercise needs key points, the others none"),
                    (dict(hint=""), "a number or a choice needs a hint for a first wrong answer, a written one none"),
                    (dict(kind="written", points=("p",)),
                     "a number or a choice needs a hint for a first wrong answer, a written one none"),
                    (dict(kind="choice", choices=("a",), to=1), "only a number has a precision"),
                    (dict(kind="choice", choices=("a",), multiple_of=32), "only a number has a precision"),
                    (dict(within_abs=2), "say the unit of within_abs")):
        with pytest.raises(ValueError) as x:
            exercise.register(Exercise("t.bad", "p", lambda: 1, lambda: "", **({"hint": "h"} | kw)))
        assert str(x.value) == f"t.bad: {msg}"
    assert "t.bad" not in made
    assert exercise.register(Exercise("t.ok", "p", lambda: 1, lambda: "", hint="h")) is made["t.ok"]
    assert exercise.register(Exercise("t.w9", "p", lambda: "m", lambda: "", kind="written", points=("p",))) \
        is made["t.w9"]


AGAIN = ("Change your answer and run both cells again: the answer and the why come with a right answer, a second "
         "wrong one, or exercises.show_answer(key).")


def test_a_number_right_wrong_below_above_and_with_context(made):
    f = exercise.grade("t.n", 1056)
    assert (f.status, f.correct, f.expected) == ("right", True, 1056)
    assert f.text == "[t.n] right: 1,056.\n  Why: 132 x 8 x 1" and str(f) == f.text
    f = exercise.grade("t.n", 1055)
    assert f.status == "wrong" and not f.correct
    assert f.text == "[t.n] not quite: you wrote 1,055, the answer is 1,056.\n  Why: 132 x 8 x 1"
    assert exercise.grade("t.n", 1057).status == "wrong" and exercise.grade("t.n", 0).status == "wrong"
    assert exercise.grade("t.n", -1056).status == "wrong"
    f = exercise.grade("t.n", 2112, 2)
    assert f.status == "right" and f.text.endswith("Why: 132 x 8 x 2")
    assert exercise.grade("t.n", 1056.0).status == "right"


def test_a_first_wrong_answer_gets_what_is_wrong_and_the_hint_never_the_key(made):
    f = exercise.grade("t.n", 1055, reveal=False)
    assert (f.status, f.expected) == ("wrong", 1056)
    assert f.text == f"[t.n] not quite: you wrote 1,055: too low.\n  Hint: SMs x blocks per SM\n  {AGAIN}"
    assert exercise.grade("t.n", 1057, reveal=False).text.startswith("[t.n] not quite: you wrote 1,057: too high.")
    assert exercise.grade("t.n", 1056, reveal=False).text == "[t.n] right: 1,056.\n  Why: 132 x 8 x 1"
    f = exercise.grade("t.c", "contention", reveal=False)
    assert f.text == f"[t.c] not quite: not 'contention'.\n  Hint: far and tight\n  {AGAIN}"
    assert "starvation" not in f.text and "Why" not in f.text and "1,056" not in exercise.grade(
        "t.n", 9, reveal=False).text


@pytest.mark.parametrize("answer, says", [
    (1_056_000, "a factor of 1,000 off: check the unit (ns, µs, ms; B, KB, MB)"),
    (1.056, "a factor of 1,000 off: check the unit (ns, µs, ms; B, KB, MB)"),
    (105_600, "a factor of 100 off: a percent written as a fraction, or the other way round"),
    (10.56, "a factor of 100 off: a percent written as a fraction, or the other way round"),
    (10_560, "a factor of 10 off: check a unit or a digit"),
    (105.6, "a factor of 10 off: check a unit or a digit"),
    (1056.5, "1,056.5 is not a whole number, and the answer is a count"),
    (-1056, "too low"), (1100, "too high"), (1000, "too low"),
])
def test_what_is_wrong_names_the_slip_without_the_number(made, answer, says):
    assert exercise.what_is_wrong(made["t.n"], answer, 1056) == says


def test_what_is_wrong_a_ratio_turned_round_close_and_whole_warps(made):
    r = Exercise("t.r", "B/A", lambda: 0.5, lambda: "", to=0.01, hint="h")
    assert exercise.what_is_wrong(r, 2.0, 0.5) == ("that is the ratio the other way round: check which time the "
                                                   "question divides by which")
    assert exercise.what_is_wrong(r, 0.51, 0.5) == "close, but too high for the precision the question asks (to 2 decimals)"
    assert exercise.what_is_wrong(r, 0.487, 0.5) == "close, but too low for the precision the question asks (to 2 decimals)"
    assert exercise.what_is_wrong(r, 0.52, 0.5) == "too high"              # past three half-steps: not close
    one = Exercise("t.one", "about 1", lambda: 1.02, lambda: "", to=0.01, hint="h")
    assert exercise.what_is_wrong(one, 0.97, 1.02) == "too low"           # near 1 a ratio turned round is no slip
    b = Exercise("t.b", "block", lambda: 480, lambda: "", multiple_of=32, hint="h")
    assert exercise.what_is_wrong(b, 450, 480) == "450 is not a multiple of 32: the question asks for a multiple of 32"
    assert exercise.what_is_wrong(b, 448, 480) == "too low"
    assert exercise.what_is_wrong(b, 0, 480) == "too low"


def test_relative_and_absolute_tolerances_on_both_sides(made):
    assert exercise.grade("t.rel", 2.099).status == "right" and exercise.grade("t.rel", 1.901).status == "right"
    assert exercise.grade("t.rel", 2.11).status == "wrong" and exercise.grade("t.rel", 1.89).status == "wrong"
    f = exercise.grade("t.rel", 2.05)
    assert f.text == "[t.rel] right: 2.05 (the answer is 2; within 5 % is accepted).\n  Why: measured"
    f = exercise.grade("t.rel", 0.5)
    assert f.text.startswith("[t.rel] not quite: you wrote 0.5, the answer is 2.\n")
    # abs 1.0 beats rel 1 % of 40 = 0.4: the larger tolerance counts
    assert exercise.grade("t.abs", 41.0).status == "right" and exercise.grade("t.abs", 39.0).status == "right"
    assert exercise.grade("t.abs", 41.01).status == "wrong" and exercise.grade("t.abs", 38.99).status == "wrong"
    assert exercise.grade("t.abs", 40.5).text.startswith("[t.abs] right: 40.5 (the answer is 40; within 1 % , "
                                                         "within 1 points is accepted)".replace(" , ", ", "))


def test_a_rounding_step_accepts_half_a_step_either_side_and_quotes_the_key_at_that_step(made):
    exercise.register(Exercise("t.d2", "B/A", lambda: 0.9158699808795411, lambda: "", to=0.01, hint="h"))
    exercise.register(Exercise("t.w1", "share", lambda: 20.689655172413794, lambda: "", to=1, hint="h"))
    exercise.register(Exercise("t.x", "a ratio", lambda: 1.2820825075572022, lambda: "", to=0.01, within_pct=5,
                               hint="h"))
    exercise.register(Exercise("t.b", "a block", lambda: 480, lambda: "", multiple_of=32, hint="h"))
    exercise.register(Exercise("t.n10", "a count", lambda: 2500.0, lambda: "", to=10, hint="h"))
    assert [made[k].precision() for k in ("t.d2", "t.w1", "t.x", "t.b", "t.n10", "t.n")] == [
        "to 2 decimals", "to the nearest whole number", "to 2 decimals, within 5 %", "a multiple of 32",
        "to the nearest 10", ""]
    assert made["t.abs"].precision() == "within 1 %, within 1 points"
    g = lambda k, a: exercise.grade(k, a).status     # noqa: E731
    # accepted: 0.9159 +- 0.005 = [0.91087, 0.92087]; 20.6897 +- 0.5; 1.2821 +- 5 % = [1.21798, 1.34619]
    assert [g("t.d2", a) for a in (0.92, 0.91, 0.9159, 0.9208, 0.9209, 0.9109, 0.9108, 0.9)] == [
        "right", "wrong", "right", "right", "wrong", "right", "wrong", "wrong"]
    assert [g("t.w1", a) for a in (21, 20.7, 20.18, 20.19, 21.18, 21.19, 20)] == [
        "right", "right", "wrong", "right", "right", "wrong", "wrong"]
    assert [g("t.x", a) for a in (1.22, 1.217, 1.35, 1.346, 1.28)] == ["right", "wrong", "wrong", "right", "right"]
    assert [g("t.b", a) for a in (480, 480.0, 448, 450, 500, 512)] == ["right", "right", "wrong", "wrong", "wrong",
                                                                       "wrong"]
    assert [g("t.n10", a) for a in (2505, 2495, 2506, 2494)] == ["right", "right", "wrong", "wrong"]
    assert exercise.grade("t.d2", 0.9).text.startswith("[t.d2] not quite: you wrote 0.9, the answer is 0.92.")
    assert exercise.grade("t.d2", 0.92).text.startswith("[t.d2] right: 0.92 (the answer is 0.92; to 2 decimals is "
                                                        "accepted).")
    assert exercise.grade("t.w1", 30).text.startswith("[t.w1] not quite: you wrote 30, the answer is 21.")
    assert exercise.grade("t.x", 2).text.startswith("[t.x] not quite: you wrote 2, the answer is 1.28.")
    assert exercise.grade("t.n10", 2).text.startswith("[t.n10] not quite: you wrote 2, the answer is 2,500.")


def test_an_answer_is_quoted_as_written():
    assert [exercise.said(a) for a in (7812.5, 7812, 0.92, 0.9158699808795411, 1e-12, -3.0, True, "x")] == [
        "7,812.5", "7,812", "0.92", "0.9158699808795411", "1e-12", "-3.0", "True", "'x'"]


def test_the_key_asked_for_and_its_why(made):
    f = exercise.answer("t.n", 2)
    assert (f.status, f.expected, f.text) == ("shown", 2112, "[t.n] the answer: 2,112.\n  Why: 132 x 8 x 2")
    assert exercise.answer("t.c").text == "[t.c] the answer: 'starvation'.\n  Why: tight and far"
    assert exercise.answer("t.w").text == "[t.w] the answer: the model answer.\n  Why: because"
    assert exercise.answer("t.nope").status == "invalid"
    h = exercise.answer("t.n").html()
    assert "<b style='color:#1565c0'>→ The answer</b>" in h and "<p style='margin:4px 0'>1,056.</p>" in h


def test_an_answer_of_zero_and_an_expected_zero(made):
    f = exercise.grade("t.zero", 0)
    assert f.text == "[t.zero] right: 0.\n  Why: none"
    f = exercise.grade("t.zero", 3)
    assert f.text == "[t.zero] not quite: you wrote 3, the answer is 0.\n  Why: none"
    assert exercise.grade("t.zero", 3, reveal=False).text.startswith("[t.zero] not quite: you wrote 3: too high.")
    assert exercise.grade("t.zero", -3).status == "wrong"


@pytest.mark.parametrize("answer, text", [
    ("1056", "[t.n] '1056' is not a number: the blocks per wave (blocks)."),
    (True, "[t.n] True is not a number: the blocks per wave (blocks)."),
    (float("nan"), "[t.n] nan is not a number: the blocks per wave (blocks)."),
    (float("inf"), "[t.n] inf is not a number: the blocks per wave (blocks)."),
    ([1056], "[t.n] [1056] is not a number: the blocks per wave (blocks)."),
])
def test_what_is_not_a_number_is_invalid_not_wrong(made, answer, text):
    f = exercise.grade("t.n", answer)
    assert (f.status, f.text, f.expected) == ("invalid", text, 1056)


def test_blank_and_unknown(made):
    for blank in (None, "", "   "):
        f = exercise.grade("t.n", blank)
        assert f.status == "blank" and f.text == ("[t.n] not answered yet: the blocks per wave (blocks). Write "
                                                  "your answer in the cell above and run both cells again.")
    f = exercise.grade("t.nope", 3)
    assert f.status == "invalid" and f.text == ("[t.nope] no such exercise (known: t.abs, t.c, t.n, t.rel, t.w, "
                                                "t.zero)")
    f = exercise.grade("t.rel", None)
    assert f.text == ("[t.rel] not answered yet: a time (µs) (within 5 %). Write your answer in the cell above and "
                      "run both cells again.")
    assert exercise.grade("t.rel", "x").text == "[t.rel] 'x' is not a number: a time (µs) (within 5 %)."


def test_choices(made):
    f = exercise.grade("t.c", "  Starvation ")
    assert f.status == "right" and f.text == "[t.c] right: 'starvation'.\n  Why: tight and far"
    f = exercise.grade("t.c", "contention")
    assert f.status == "wrong" and f.text == ("[t.c] not quite: you chose 'contention', the answer is "
                                              "'starvation'.\n  Why: tight and far")
    f = exercise.grade("t.c", "bandwidth")
    assert f.status == "invalid" and f.text == "[t.c] 'bandwidth' is not one of 'starvation', 'contention'."


def test_written_answers_are_self_assessed_with_the_checklist(made):
    f = exercise.grade("t.w", "my words")
    assert f.status == "self-assess" and f.expected == "the model answer" and not f.correct
    assert f.text == ("[t.w] your answer is written down. No machine grades prose here: check it yourself against "
                      "the key points a good answer makes --\n  [ ] a point\n  [ ] another point\n"
                      "  The model answer: the model answer\n  Why: because")
    f = exercise.grade("t.w", 42)
    assert f.status == "invalid" and f.text == "[t.w] write the answer as text (a string in quotes): explain."


def test_the_html_a_notebook_shows(made):
    h = exercise.grade("t.n", 1055).html()
    assert h.startswith("<div class='launchlab-feedback' style='border-left:4px solid #c62828;padding:4px 10px;"
                        "margin:6px 0;white-space:normal;overflow-wrap:break-word'>")
    assert ("<div><b style='color:#c62828'>✗ Not quite</b> <span style='color:#616161'>[t.n]</span></div>"
            "<p style='margin:4px 0'>you wrote 1,055, the answer is 1,056.</p>"
            "<p style='margin:4px 0'>Why: 132 x 8 x 1</p></div>") in h
    assert "<b style='color:#2e7d32'>✓ Right</b>" in exercise.grade("t.n", 1056).html()
    assert "<p style='margin:4px 0'>1,056.</p>" in exercise.grade("t.n", 1056).html()
    blank = exercise.grade("t.n", None).html()
    assert "<b style='color:#616161'>○ Not answered yet</b>" in blank and ">the blocks per wave" in blank
    w = exercise.grade("t.w", "x").html()
    assert ("<ul style='margin:4px 0 4px 18px;list-style:\"☐ \"'><li>a point</li><li>another point</li></ul>"
            "<p style='margin:4px 0'>The model answer: the model answer</p>") in w
    assert "✎ Your answer is written down: assess it yourself" in w
    assert "<b style='color:#e65100'>! Check the form of your answer</b>" in exercise.grade("t.n", "x").html()
    odd = Feedback("k", "other", "[k] a <b> & c\n\n  more")
    assert odd.html().endswith("<div><b style='color:#424242'>• other</b> <span style='color:#616161'>[k]</span>"
                               "</div><p style='margin:4px 0'>a &lt;b&gt; &amp; c</p><p style='margin:4px 0'>more</p>"
                               "</div>") and odd._repr_html_() == odd.html()


def test_numbers_as_the_feedback_writes_them():
    fmt = exercise._fmt
    assert (fmt(0.123456), fmt(999.4), fmt(1000.0), fmt(123456.7), fmt(-2500.0)) == (
        "0.123", "999", "1,000", "123,457", "-2,500")
    assert (fmt(1056), fmt(-3), fmt("a"), fmt(None)) == ("1,056", "-3", "a", "None")


def test_prose_given_a_verdict_is_counted(made, monkeypatch):
    assert exercise.verdicts_on_prose() == 0
    monkeypatch.setitem(made, "t.w", Exercise("t.w", "explain", lambda: "model", lambda: "", kind="choice",
                                              choices=("model", "other")))
    made["t.w2"] = Exercise("t.w2", "explain", lambda: "x", lambda: "", kind="written", points=("p",))
    assert exercise.verdicts_on_prose() == 0          # a choice exercise is not prose
    made["t.w3"] = Exercise("t.w3", "explain", lambda: "x", lambda: "", kind="written", points=("p",))
    real = exercise.grade
    monkeypatch.setattr(exercise, "grade", lambda k, a: Feedback(k, "right" if k == "t.w3" else "self-assess", ""))
    assert exercise.verdicts_on_prose() == 1
    monkeypatch.setattr(exercise, "grade", lambda k, a: Feedback(k, "wrong" if a == "I do not know." else
                                                                 "self-assess", ""))
    assert exercise.verdicts_on_prose() == 2 and exercise.verdicts_on_prose(("x",)) == 0
    assert real("t.w2", "anything").status == "self-assess"


def test_the_html_drops_only_the_leading_key_and_keeps_every_paragraph():
    f = Feedback("k", "wrong", "[k] not quite: see [k] above\n  one\n  two")
    assert f.html().endswith("<p style='margin:4px 0'>see [k] above</p><p style='margin:4px 0'>one</p>"
                             "<p style='margin:4px 0'>two</p></div>")


def test_invalid_feedback_keeps_its_key_and_the_right_answer(made):
    for key, answer, expected in (("t.c", "bandwidth", "starvation"), ("t.w", 42, "the model answer"),
                                  ("t.n", "x", 1056)):
        f = exercise.grade(key, answer)
        assert (f.key, f.status, f.expected) == (key, "invalid", expected)
    f = exercise.grade("t.nope", 1)
    assert (f.key, f.expected) == ("t.nope", None)


def test_what_is_wrong_at_its_bounds(made):
    """Each bound of what_is_wrong tried on both sides with numbers that are exact in binary (issue 58)."""
    half = Exercise("t.h", "a ratio", lambda: 0.25, lambda: "", to=0.5, hint="h")      # tolerance 0.25
    # 1/2 = 0.5 is exactly one tolerance from 0.25: the ratio turned round (at the bound, not past it)
    assert exercise.what_is_wrong(half, 2.0, 0.25).startswith("that is the ratio the other way round")
    two = Exercise("t.2", "a ratio", lambda: 2.0, lambda: "", to=0.5, hint="h")
    # 2.75 - 2 = 0.75 = 3 tolerances exactly: still close; 2.875 is 3.5 tolerances off: too high
    assert exercise.what_is_wrong(two, 2.75, 2.0) == "close, but too high for the precision the question asks (to the nearest 0.5)"
    assert exercise.what_is_wrong(two, 2.875, 2.0) == "too high"
    assert exercise.what_is_wrong(two, 0.5, 2.0).startswith("that is the ratio the other way round")   # |2 - 1| > 0.05
    exact = Exercise("t.3", "a ratio", lambda: 3.0, lambda: "", hint="h")                # no tolerance: 1 % of 3
    assert exercise.what_is_wrong(exact, 1 / 3.02, 3.0).startswith("that is the ratio the other way round")
    assert exercise.what_is_wrong(exact, 1 / 3.05, 3.0) == "too low"
    near_one = Exercise("t.1", "a ratio", lambda: 1.02, lambda: "", to=0.01, hint="h")
    # 1 / 0.98 = 1.0204 is within 1 % of 1.02, but near 1 a ratio turned round is no slip: just too low
    assert exercise.what_is_wrong(near_one, 0.98, 1.02) == "too low"
    big = Exercise("t.500", "a time", lambda: 500.0, lambda: "", to=1, hint="h")
    assert exercise.what_is_wrong(big, 0.5, 500.0) == "a factor of 1,000 off: check the unit (ns, µs, ms; B, KB, MB)"
    assert exercise.what_is_wrong(big, -0.5, 500.0) == "too low"                  # the other sign is no unit slip
    assert exercise.what_is_wrong(made["t.zero"], -3, 0) == "too low"              # a zero key divides nothing
    assert exercise.what_is_wrong(made["t.zero"], 3, 0) == "too high"
    assert exercise.what_is_wrong(made["t.n"], 0, 1056) == "too low"


def test_precision_words_at_each_step():
    mk = lambda **kw: Exercise("t.p", "p", lambda: 1.0, lambda: "", hint="h", **kw)     # noqa: E731
    assert [mk(to=t).precision() for t in (0.1, 0.01, 0.001, 1, 10, 0.5)] == [
        "to 1 decimal", "to 2 decimals", "to 3 decimals", "to the nearest whole number", "to the nearest 10",
        "to the nearest 0.5"]
    assert mk(within_abs=2).precision() == "within 2"                     # no unit: no trailing space
    assert mk(within_abs=2, unit="points", multiple_of=8).precision() == "within 2 points, a multiple of 8"
    assert mk(to=0.01).shown(0.9158) == "0.92" and mk(to=10).shown(2494.0) == "2,494"
    assert mk(to=0.1).shown(7) == "7" and mk().shown(0.9158) == "0.916"


def test_every_feedback_keeps_its_key_status_and_answer(made):
    for key, answer, want in (("t.n", 1000, 1056), ("t.c", "contention", "starvation")):
        for reveal in (False, True):
            f = exercise.grade(key, answer, reveal=reveal)
            assert (f.key, f.status, f.expected) == (key, "wrong", want), (key, reveal)
    with pytest.raises(ValueError, match="only a number has a precision"):
        exercise.register(Exercise("t.cp", "p", lambda: "a", lambda: "", kind="choice", choices=("a",), hint="h",
                                   within_pct=5))
    with pytest.raises(ValueError, match="only a number has a precision"):
        exercise.register(Exercise("t.ca", "p", lambda: "a", lambda: "", kind="choice", choices=("a",), hint="h",
                                   within_abs=1, unit="points"))
    f = exercise.answer("t.nope")
    assert (f.key, f.status, f.text) == ("t.nope", "invalid", "[t.nope] no such exercise (known: t.abs, t.c, t.n, "
                                                              "t.rel, t.w, t.zero)")
