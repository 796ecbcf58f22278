"""The learner's hands on the geometry (issue 39), measured from what is committed: `summary --json`'s "hands".

    your_turn_cells             code cells tagged `your-turn` in the section notebooks: a launch whose grid and
                                block are literals the learner edits (launchlab.core.yourturn)
    your_turn_sections          the sections those cells are in
    your_turn_replay_points     the launches the H200 recording times for them (recording `your_turn`), counted
                                once where two sections share a kernel and its points
    lab_learner_written_steps   the lab's steps whose code the learner writes (cells tagged `learner-written`
                                in notebooks/09, each naming its step in `metadata.launchlab.step`)
    gpu_grading_fixtures        the GPU-grading report's submissions (data/grading/gpu.json, `grade --gpu` on
                                the H200), and how many of them were scored as they deserve
    transfer_exercises          exercises whose question moves to a GPU, shape or context no notebook shows
                                (launchlab.core.transfer): their answers are printed nowhere in the course
    refusal_lines_max           the most lines a refusal takes on the learner's screen, over every edit of
                                launchlab.faces.refusals (each your-turn cell and the lab's plan, written wrong,
                                run in a notebook by nbclient: data/reading/refusals.json)
    exercises_with_second_try   the numeric exercises whose first wrong answer gets a hint and not the key, and
                                whose second, different wrong answer gets the key (issue 58; each tried)
    public_check_catches        the wrong steps 6-7 of lab_fixtures.PUBLIC_CASES (the lab's fixtures, by name, and
    public_check_cases          three more) that the public check (fix.problems6 / problems7) refuses before
                                grading -- none while it refuses the right fix; and how many there are

Nothing here measures; each figure is counted from the notebooks, the recording or a report.
"""
from __future__ import annotations

import json
from pathlib import Path

from launchlab import sections
from launchlab.core import paths
from launchlab.core import exercise
from launchlab.core.exercise import EXERCISES
from launchlab.core.transfer import TRANSFER
from launchlab.faces import grading, refusals

NOTEBOOKS = paths.ROOT / "notebooks"
GPU_GRADING = paths.ROOT / "data" / "grading" / "gpu.json"
LAB = "09_lab_audit.ipynb"


def _cells(nb: str) -> list[dict]:
    return json.loads((NOTEBOOKS / nb).read_text())["cells"]


def your_turn_cells() -> dict[str, int]:
    """{section key: your-turn cells in its notebooks}."""
    out: dict[str, int] = {}
    for s in sections.all():
        n = sum("your-turn" in c.get("metadata", {}).get("tags", []) for nb in s.notebooks for c in _cells(nb)
                if c["cell_type"] == "code")
        if n:
            out[s.key] = n
    return out


def replay_points(data_dir=None) -> int:
    owners = [s.turn for s in sections.all() if s.turn is not None and s.turn.shares is None]
    return sum(len(t.recorded(data_dir).points) for t in owners)


def learner_written_steps() -> list[int]:
    steps = set()
    for c in _cells(LAB):
        if "learner-written" in c.get("metadata", {}).get("tags", []):
            step = c["metadata"].get("launchlab", {}).get("step")
            if isinstance(step, int):
                steps.add(step)
    return sorted(steps)


def gpu_grading(report: Path = GPU_GRADING) -> tuple[int, int]:
    """(fixtures graded on the GPU, scored as they deserve) from the committed `grade --gpu` report; (0, 0)
    where there is none yet."""
    if not report.exists():
        return 0, 0
    r = json.loads(report.read_text())
    rows = r["fixtures"]
    return len(rows), sum(bool(x["as_deserved"]) for x in rows)


def transfer_exercises() -> list[str]:
    sections.all()                                # every section's exercises registered
    return sorted(k for k in EXERCISES if k in TRANSFER)


def exercises_with_second_try(kinds=("number",)) -> int:
    """Each numeric exercise (or of `kinds`) answered wrong twice in the checker's way: the first answer must get the
    hint and not the key, the second (a different one) the key and the why."""
    sections.all()                                # every section's exercises registered
    n = 0
    for key, e in EXERCISES.items():
        if e.kind not in kinds:
            continue
        ctx = e.recorded() if e.recorded else ()
        want = e.expected(*ctx)
        if e.kind == "number":
            wrong = (float(want) * 3 + 7, float(want) * 5 + 11)
            key_said = e.shown(want)
        else:
            wrong = tuple(c for c in e.choices if c != want)[:2] * 2
            key_said = repr(want)
        first = exercise.grade(key, wrong[0], *ctx, reveal=False)
        second = exercise.grade(key, wrong[1], *ctx, reveal=True)
        told = first.text.split(": ", 2)[-1]
        n += (first.status == second.status == "wrong" and "Hint: " in first.text and "Why:" not in first.text
              and key_said not in told and f"the answer is {key_said}" in second.text and "Why:" in second.text)
    return n


def public_check(cases: dict | None = None) -> tuple[list[str], int]:
    """(the wrong cases the public check refuses, by name; how many wrong cases), ([], n) if it refuses the
    right fix."""
    fix = next(s.rerun for s in sections.all() if s.rerun is not None)      # the lab's fix, through the registry
    cases = grading.fixtures().PUBLIC_CASES if cases is None else cases

    def refused(plan, arms, sequence, depths) -> bool:
        return bool(fix.problems6(plan, arms, sequence) + fix.problems7(arms, depths))
    wrong = {k: v for k, v in cases.items() if k != "right"}
    if refused(*cases["right"]):
        return [], len(wrong)
    return sorted(k for k, v in wrong.items() if refused(*v)), len(wrong)


STEP6_POINTS = 3


def arms_scores(report: Path | None = None) -> dict:
    """`summary --json`'s "grading" (issue 58), from the last `grade --benchmark`: what step 6 gave an A/B in
    which nothing differs (both arms LAUNCHLAB_LAB_ADD=1: fixture gate_does_not_switch) and one whose arm A also
    changes a second gate (MLA_FLOOR: bytes_move_claimed_identical), out of its 3 points, as graded in the sandbox."""
    report = report or Path(next(s.graded["report"] for s in sections.all() if s.graded))
    fx = json.loads(Path(report).read_text())["fixtures"]
    return {"unswitched_arms_score": STEP6_POINTS - fx["gate_does_not_switch"]["lost"].get("q6", 0),
            "confounded_arms_score": STEP6_POINTS - fx["bytes_move_claimed_identical"]["lost"].get("q6", 0),
            "step6_points": STEP6_POINTS}


def headline(data_dir=None) -> dict:
    cells = your_turn_cells()
    fixtures, right = gpu_grading()
    caught, cases = public_check()
    return {"your_turn_cells": sum(cells.values()), "your_turn_sections": sorted(cells),
            "your_turn_replay_points": replay_points(data_dir), "lab_learner_written_steps": learner_written_steps(),
            "gpu_grading_fixtures": fixtures, "gpu_grading_fixtures_right": right,
            "transfer_exercises": len(transfer_exercises()), "refusal_lines_max": refusals.load()["max_lines"],
            "exercises_with_second_try": exercises_with_second_try(), "public_check_catches": caught,
            "public_check_cases": cases}
