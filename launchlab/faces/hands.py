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

Nothing here measures; each figure is counted from the notebooks, the recording or a report.
"""
from __future__ import annotations

import json
from pathlib import Path

from launchlab import sections
from launchlab.core import paths
from launchlab.core.exercise import EXERCISES
from launchlab.core.transfer import TRANSFER
from launchlab.faces import refusals

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


def headline(data_dir=None) -> dict:
    cells = your_turn_cells()
    fixtures, right = gpu_grading()
    return {"your_turn_cells": sum(cells.values()), "your_turn_sections": sorted(cells),
            "your_turn_replay_points": replay_points(data_dir), "lab_learner_written_steps": learner_written_steps(),
            "gpu_grading_fixtures": fixtures, "gpu_grading_fixtures_right": right,
            "transfer_exercises": len(transfer_exercises()), "refusal_lines_max": refusals.load()["max_lines"]}
