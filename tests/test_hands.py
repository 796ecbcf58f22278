"""The learner's hands on the geometry (issue 39): a your-turn launch with literal grid and block in every section
notebook 01-08, exercises that transfer to a GPU, shape or context no notebook shows, and what `summary --json`
reports of them (launchlab.faces.hands)."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from launchlab import sections
from launchlab.core import exercise as ex
from launchlab.core.transfer import TRANSFER
from launchlab.faces import hands, reading

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
sections.all()


def _cells(nb: Path) -> list[dict]:
    return json.loads(nb.read_text())["cells"]


def _your_turn(nb: Path) -> list[dict]:
    return [c for c in _cells(nb) if "your-turn" in c["metadata"].get("tags", [])]


def test_every_section_01_to_08_has_one_your_turn_cell_and_no_other_notebook_does():
    where = {nb.name: len(_your_turn(nb)) for nb in NOTEBOOKS if _your_turn(nb)}
    keys = sorted(n[:2] for n in where)
    assert keys == ["01", "02", "03", "04", "05", "06", "07", "08"] and set(where.values()) == {1}


@pytest.mark.parametrize("nb", [nb for nb in NOTEBOOKS if _your_turn(nb)], ids=lambda p: p.stem)
def test_a_your_turn_cell_writes_grid_and_block_as_literals_and_launches_them_through_its_sections_turn(nb):
    (cell,) = _your_turn(nb)
    src = "".join(cell["source"])
    assert len(src.strip().splitlines()) <= 12
    tree = ast.parse(src)
    literal = [n for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Tuple)
               and [t.id for t in n.targets[0].elts][:2] == ["grid", "block"]]
    assert len(literal) == 1
    value = literal[0].value
    assert isinstance(value, ast.Tuple)
    for v in value.elts:                       # numbers, tuples of numbers, or 100 * 1024: nothing computed elsewhere
        assert all(isinstance(x, (ast.Constant, ast.Tuple, ast.BinOp, ast.Mult, ast.Load)) for x in ast.walk(v)), src
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "launch"]
    assert len(calls) == 1 and [a.id for a in calls[0].args][:2] == ["grid", "block"]
    imp = next(n for n in tree.body if isinstance(n, ast.ImportFrom))
    assert imp.module == f"launchlab.sections.{_folder(nb.name[:2])}.turn"
    out = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
    assert "occupancy" in out and "÷ 132 SMs" in out and "L2" in out, out


def _folder(key: str) -> str:
    return next(f for f in sections.FOLDERS if f[1:3] == key)


def test_every_section_01_to_08_has_an_exercise_that_transfers():
    keys = hands.transfer_exercises()
    assert len(keys) >= 8
    assert {k[:2] for k in keys} >= {"01", "02", "03", "04", "05", "06", "07", "08"}
    assert all(len(TRANSFER[k]) > 10 for k in keys)


@pytest.mark.parametrize("key", hands.transfer_exercises())
def test_a_transfer_exercises_answer_is_printed_nowhere_in_the_course(key):
    e = ex.EXERCISES[key]
    want = e.expected(*(e.recorded() if e.recorded else ()))
    assert isinstance(want, (int, float)) and want
    for nb in NOTEBOOKS:
        for i, c in enumerate(_cells(nb)):
            text = "".join(c["source"]) if c["cell_type"] == "markdown" else "\n".join(
                reading._text(o) for o in c.get("outputs", []))
            assert reading._reveals(e, want, text) is None, (nb.name, i)


def test_the_answer_check_sees_a_printed_answer():
    """The complement: the same check finds the answer where it is printed."""
    e = ex.EXERCISES["07.transfer_grid_3m"]
    assert reading._reveals(e, 7813, "the grid is 7,813 blocks") is not None
    assert reading._reveals(e, 7813, "the grid is 7,812 blocks") is None


def test_the_summary_counts_what_is_committed(summary_figures):
    h = summary_figures["hands"]
    turns = sum(len(_your_turn(nb)) for nb in NOTEBOOKS)
    owners = [s.turn for s in sections.all() if s.turn is not None and s.turn.shares is None]
    rec = json.loads((ROOT / "data" / "recordings" / "your_turn.json").read_text())["data"]
    assert h["your_turn_cells"] == turns == 8
    assert h["your_turn_sections"] == ["01", "02", "03", "04", "05", "06", "07", "08"]
    # the points the H200 recorded; 07's ten short grids (issue 58) wait for its re-recording (test_yourturn)
    assert h["your_turn_replay_points"] == sum(len(rec[t.key]["points"]) for t in owners) >= sum(
        len(t.points) for t in owners) - 10
    assert h["transfer_exercises"] == len(hands.transfer_exercises())
    assert set(h) == {"your_turn_cells", "your_turn_sections", "your_turn_replay_points", "lab_learner_written_steps",
                      "gpu_grading_fixtures", "gpu_grading_fixtures_right", "transfer_exercises", "refusal_lines_max",
                      "exercises_with_second_try", "public_check_catches", "public_check_cases"}


def test_gpu_grading_counts_each_fixture_once_and_only_the_ones_scored_as_deserved(tmp_path):
    assert hands.gpu_grading(tmp_path / "none.json") == (0, 0)
    p = tmp_path / "gpu.json"
    p.write_text(json.dumps({"fixtures": [{"name": "a", "as_deserved": True}, {"name": "b", "as_deserved": False},
                                          {"name": "c", "as_deserved": True}]}))
    assert hands.gpu_grading(p) == (3, 2)


def test_every_number_and_choice_exercise_gives_a_second_try_and_the_count_sees_one_that_does_not(monkeypatch):
    """Issue 58: each of the 27 numeric exercises (and the 13 choices) answers a first wrong answer with a hint,
    not the key, and a second with the key; a checker that gives the key at once is counted out."""
    from launchlab.core import exercise
    n = sum(e.kind == "number" for e in hands.EXERCISES.values())
    assert hands.exercises_with_second_try() == n == 27
    assert hands.exercises_with_second_try(("choice",)) == 13
    real = exercise.grade
    monkeypatch.setattr(exercise, "grade", lambda k, a, *c, reveal=True: real(k, a, *c, reveal=True))
    assert hands.exercises_with_second_try() == 0

    def leaks(k, a, *c, reveal=True):            # a first try that quotes the key beside its hint
        fb = real(k, a, *c, reveal=reveal)
        if not reveal:
            e = hands.EXERCISES[k]
            fb.text += f" (it is {e.shown(e.expected(*c))})"
        return fb
    monkeypatch.setattr(exercise, "grade", leaks)
    assert hands.exercises_with_second_try() == 0


def test_the_public_check_count_refuses_every_wrong_case_and_counts_nothing_if_it_refuses_the_right_fix():
    caught, cases = hands.public_check()
    assert caught == ["abab_alternating", "abba_not_interleaved", "arms_swapped", "bytes_move_claimed_identical",
                      "gate_does_not_switch", "one_depth", "plan_misses_elements", "plan_writes_out_of_bounds"]
    assert cases == 8
    from launchlab.faces import grading
    fx = grading.fixtures()                        # every step 6-7 fixture the grader re-runs is among them
    assert {k for k, (_, _, lost) in fx.FIXTURES.items() if k in fx.GPU_FIXTURES and lost} <= set(caught)
    from launchlab.faces import grading
    pc = dict(grading.fixtures().PUBLIC_CASES)
    right = pc["right"]
    assert hands.public_check({"right": right, "also right": (right[0], right[1], "BAABBA", right[3])}) == ([], 1)
    assert hands.public_check({"right": pc["gate_does_not_switch"], "x": pc["one_depth"]}) == ([], 1)


def test_the_arms_scores_read_step_6_of_the_two_fixtures(tmp_path):
    """summary's "grading": 3 points minus what step 6 lost, per fixture, from the benchmark's report."""
    p = tmp_path / "report.json"
    p.write_text(json.dumps({"fixtures": {"gate_does_not_switch": {"lost": {"q6": 3.0, "q7": 1.0}},
                                          "bytes_move_claimed_identical": {"lost": {"q7": 1.0}}}}))
    assert hands.arms_scores(p) == {"unswitched_arms_score": 0.0, "confounded_arms_score": 3,
                                    "step6_points": 3}
    committed = hands.arms_scores()
    assert committed["unswitched_arms_score"] == committed["confounded_arms_score"] == 0
