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
    assert h["your_turn_replay_points"] == sum(len(rec[t.key]["points"]) for t in owners) == sum(
        len(t.points) for t in owners)
    assert h["transfer_exercises"] == len(hands.transfer_exercises())
    assert set(h) == {"your_turn_cells", "your_turn_sections", "your_turn_replay_points", "lab_learner_written_steps",
                      "gpu_grading_fixtures", "gpu_grading_fixtures_right", "transfer_exercises", "refusal_lines_max"}


def test_gpu_grading_counts_each_fixture_once_and_only_the_ones_scored_as_deserved(tmp_path):
    assert hands.gpu_grading(tmp_path / "none.json") == (0, 0)
    p = tmp_path / "gpu.json"
    p.write_text(json.dumps({"fixtures": [{"name": "a", "as_deserved": True}, {"name": "b", "as_deserved": False},
                                          {"name": "c", "as_deserved": True}]}))
    assert hands.gpu_grading(p) == (3, 2)
