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
    reg(Exercise("t.n", "the blocks per wave (blocks)", lambda k=1: 1056 * k, lambda k=1: f"132 x 8 x {k}"))
    reg(Exercise("t.rel", "a time (µs)", lambda: 2.0, lambda: "measured", rel_tol=0.05))
    reg(Exercise("t.abs", "a share (%)", lambda: 40.0, lambda: "by hand", abs_tol=1.0, rel_tol=0.01))
    reg(Exercise("t.zero", "a count", lambda: 0, lambda: "none"))
    reg(Exercise("t.c", "which", lambda: "starvation", lambda: "tight and far", kind="choice",
                 choices=("starvation", "contention")))
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
                    (dict(points=("p",)), "a written exercise needs key points, the others none")):
        with pytest.raises(ValueError) as x:
            exercise.register(Exercise("t.bad", "p", lambda: 1, lambda: "", **kw))
        assert str(x.value) == f"t.bad: {msg}"
    assert "t.bad" not in made and exercise.register(Exercise("t.ok", "p", lambda: 1, lambda: "")) is made["t.ok"]


def test_a_number_right_wrong_below_above_and_with_context(made):
    f = exercise.grade("t.n", 1056)
    assert (f.status, f.correct, f.expected) == ("right", True, 1056)
    assert f.text == "[t.n] right: 1,056.\n  Why: 132 x 8 x 1" and str(f) == f.text
    f = exercise.grade("t.n", 1055)
    assert f.status == "wrong" and not f.correct
    assert f.text == "[t.n] not quite: you wrote 1,055, the answer is 1,056 (1.00x the answer).\n  Why: 132 x 8 x 1"
    assert exercise.grade("t.n", 1057).status == "wrong" and exercise.grade("t.n", 0).status == "wrong"
    assert exercise.grade("t.n", -1056).status == "wrong"
    f = exercise.grade("t.n", 2112, 2)
    assert f.status == "right" and f.text.endswith("Why: 132 x 8 x 2")
    assert exercise.grade("t.n", 1056.0).status == "right"


def test_relative_and_absolute_tolerances_on_both_sides(made):
    assert exercise.grade("t.rel", 2.099).status == "right" and exercise.grade("t.rel", 1.901).status == "right"
    assert exercise.grade("t.rel", 2.11).status == "wrong" and exercise.grade("t.rel", 1.89).status == "wrong"
    f = exercise.grade("t.rel", 2.05)
    assert f.text == "[t.rel] right: 2.05 (the answer is 2; accepted within 0.1).\n  Why: measured"
    f = exercise.grade("t.rel", 0.5)
    assert f.text.startswith("[t.rel] not quite: you wrote 0.5, the answer is 2 (0.25x the answer).")
    # abs 1.0 beats rel 1 % of 40 = 0.4: the larger tolerance counts
    assert exercise.grade("t.abs", 41.0).status == "right" and exercise.grade("t.abs", 39.0).status == "right"
    assert exercise.grade("t.abs", 41.01).status == "wrong" and exercise.grade("t.abs", 38.99).status == "wrong"
    assert exercise.grade("t.abs", 40.5).text.startswith("[t.abs] right: 40.5 (the answer is 40; accepted within 1)")


def test_an_answer_of_zero_and_an_expected_zero(made):
    f = exercise.grade("t.zero", 0)
    assert f.text == "[t.zero] right: 0.\n  Why: none"
    f = exercise.grade("t.zero", 3)
    assert f.text == "[t.zero] not quite: you wrote 3, the answer is 0.\n  Why: none"      # no ratio to 0
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
            "<p style='margin:4px 0'>you wrote 1,055, the answer is 1,056 (1.00x the answer).</p>"
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
