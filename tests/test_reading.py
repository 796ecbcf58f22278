"""What a learner reads (launchlab.faces.reading, launchlab.core.quantity): the pacing rule, a quantity printed
with two values, an exercise answered above its question -- each found in a made-up notebook, and none in the
committed ones."""
import json

import pytest

from launchlab.core import quantity
from launchlab.core.exercise import Exercise
from launchlab.faces import reading


def _nb(tmp_path, cells, name="99_x.ipynb"):
    p = tmp_path / name
    p.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return p


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(src="x = 1", outputs=(), tags=()):
    return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": src, "outputs": list(outputs)}


def said(key, text):
    return {"output_type": "display_data", "data": {"text/plain": text},
            "metadata": {quantity.METADATA_KEY: {"quantities": {key: text}}}}


def printed(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def test_the_pacing_rule(tmp_path):
    png = {"output_type": "display_data", "data": {"image/png": "x", "text/plain": "<Figure>"}}
    widget = {"output_type": "display_data", "data": {reading.WIDGET_VIEW: {}, "image/png": "x"}}
    p = _nb(tmp_path, [md(" ".join(["word"] * 300)), code(outputs=[png]), code(outputs=[widget]), code()])
    pace = reading.pace(p)
    assert (pace.words, pace.code_cells, pace.figures, pace.explorers) == (300, 2, 1, 1)
    # an explorer's preview is not a second figure, and its cell is not a second minute: the explorer is it
    assert pace.minutes == pytest.approx(300 / 150 + 2 + 1 + 1)


def test_a_quantity_printed_twice_with_two_values_is_found(tmp_path):
    a = _nb(tmp_path, [code(outputs=[said("02.norm_saving_ms", "0.583 ms")])], "98_a.ipynb")
    b = _nb(tmp_path, [code(outputs=[said("02.norm_saving_ms", "0.871 ms")]),
                       code(outputs=[said("06.other_ms", "1.000 ms")])], "99_b.ipynb")
    r = reading.read([a, b])
    assert list(r.conflicts) == ["02.norm_saving_ms"] and reading.headline(r)["quantities_with_two_values"] == 1
    same = _nb(tmp_path, [code(outputs=[said("02.norm_saving_ms", "0.583 ms")])], "97_c.ipynb")
    assert reading.read([a, same]).conflicts == {}


def said_many(pairs, because=None):
    """One output that prints several quantities (key -> text), with the reasons given (key -> why)."""
    meta = {"quantities": dict(pairs)}
    if because:
        meta["because"] = because
    return {"output_type": "display_data", "data": {"text/plain": "x"}, "metadata": {quantity.METADATA_KEY: meta}}


STEP, SLICE = "06.main_step_ms", "05.main_step_green_context_ms"      # one group of quantity.GROUPS


@pytest.mark.parametrize("cells, drifts", [
    ([[(STEP, "14.636 ms")], [(SLICE, "15.237 ms")]], 1),                         # no word why
    ([[(STEP, "14.636 ms")], [(SLICE, "15.237 ms", "another run")]], 0),          # the reason beside the later
    ([[(SLICE, "15.237 ms", "another run"), (STEP, "14.636 ms")]], 0),             # side by side: said once
    ([[(SLICE, "15.237 ms", "another run")], [(STEP, "14.636 ms")]], 1),           # reason far from the later
    ([[(STEP, "100.000 ms")], [(SLICE, "100.500 ms")]], 0),                       # 0.5 %: one figure, rounded
    ([[(STEP, "100.000 ms")], [(SLICE, "100.600 ms")]], 1),                       # just past it
    ([[(STEP, "995.000 ms")], [(SLICE, "1000.000 ms")]], 0),                      # exactly 0.5 % of the larger
    ([[(STEP, "14.636 ms")], [("06.other_ms", "15.237 ms")]], 0),                  # not one group
])
def test_a_figure_measured_twice_drifts_only_with_its_reason(tmp_path, cells, drifts):
    outs = []
    for cell in cells:
        pairs = [(k, t) for k, t, *_ in cell]
        why = {k: w[0] for k, t, *w in cell if w}
        outs.append(code(outputs=[said_many(pairs, why)]))
    r = reading.read([_nb(tmp_path, outs)])
    assert len(reading.drifting(r.printed)) == drifts == reading.headline(r)["quantities_drifting_without_why"]


def test_a_reason_is_only_for_a_key_of_a_group():
    assert quantity.of(SLICE, 15.2, because="another run").because == "another run"
    with pytest.raises(quantity.QuantityError, match="in none"):
        quantity.of("06.other_ms", 1.0, because="why")


def test_an_answer_printed_above_its_question_is_found(tmp_path):
    reg = {"99.n": Exercise("99.n", "how many", lambda: 1056, lambda: "", kind="number"),
           "99.c": Exercise("99.c", "which", lambda: "yes", lambda: "", kind="choice", choices=("yes", "no"),
                            shown_by=(r"gate sees\s+it",))}
    ask = [code("my_n = None", tags=["exercise"]), code('exercises.check("99.n", my_n)', tags=["check"]),
           code("my_c = None", tags=["exercise"]), code('exercises.check("99.c", my_c)', tags=["check"])]
    before = _nb(tmp_path, [code(outputs=[printed("8 blocks/SM; 1056 blocks per wave\n")]), md("the gate sees it"), *ask])
    found = {(r.key, r.shown_in_cell) for r in reading.answers_above(before, reg)}
    assert found == {("99.n", 0), ("99.c", 1)}
    after = _nb(tmp_path, [*ask, code(outputs=[printed("1056 blocks per wave\n")]), md("the gate sees it")], "98_y.ipynb")
    assert reading.answers_above(after, reg) == []
    setting = _nb(tmp_path, [code(outputs=[printed("width 1056: 3.1 us\n")]), *ask], "97_z.ipynb")
    assert reading.answers_above(setting, reg) == []                 # a setting's digits are not a result


def test_quantities_have_one_unit_and_refuse_a_bad_key_or_value():
    assert quantity.of("03.main_kernel_ratio", 34.78).text == "34.8×"
    assert quantity.of("06.rms_wide_gate_cost_ms_per_token", 0.8858).text == "0.886 ms/token"
    assert quantity.of("03.fix_projected_tok_s_gain_pct", 8.81).text == "+8.8 %"
    assert quantity.of("03.main_kernel_cold_us", 26.05).text == "26.1 µs"
    for bad in ("ratio", "3.x", "03.Main", "03.main_kernel_ratio!", "03.main_kernel_ratio ", "course.a-b",
                "lecture.x\n"):                       # valid up to a bad suffix: refused too (issue 43)
        with pytest.raises(quantity.QuantityError):
            quantity.of(bad, 1.0)
    for v in (float("nan"), "1", True):
        with pytest.raises(quantity.QuantityError):
            quantity.of("03.main_kernel_ratio", v)


def test_the_committed_course_reads_within_the_rule():
    r = reading.read()
    assert r.conflicts == {}, r.conflicts
    assert r.revealed == [], r.revealed
    assert r.longest.minutes <= reading.LIMITS_MIN[1], r.longest
    assert {"03.main_kernel_ratio", "03.contrast_kernel_ratio"} <= {p.key for p in r.printed}


def test_every_printed_quantity_with_a_summary_key_matches_the_summary(summary_figures):
    """A quantity named by a summary key prints the summary's (recorded) value in replay."""
    figs = summary_figures
    checked = 0
    for p in reading.read().printed:
        sec, name = p.key.split(".", 1)
        if name in figs.get(sec, {}):
            assert quantity.of(p.key, figs[sec][name]).text == p.text, p
            checked += 1
    assert checked >= 10
