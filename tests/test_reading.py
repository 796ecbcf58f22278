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
    for bad in ("ratio", "3.x", "03.Main"):
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
