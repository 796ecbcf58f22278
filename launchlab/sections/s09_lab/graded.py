"""The graded lab's files, and the figures of its last grading benchmark (what `summary --json` shows
under "09"). The grader itself (otter-grader, `make grade`) is launchlab.faces.grading, which finds these
paths through this section's manifest."""
from __future__ import annotations

import json
from pathlib import Path

from launchlab.core import paths

MASTER = paths.ROOT / "lab_solutions" / "09_lab_audit.ipynb"      # solutions, public and hidden tests
LEARNER = paths.ROOT / "notebooks" / "09_lab_audit.ipynb"         # generated from the master by otter assign
REPORT = paths.ROOT / "data" / "grading" / "report.json"          # the last `grade --benchmark` run
RELEASE = paths.ROOT / "data" / "release" / "report.json"         # the last `make release`: leaks of the above


def recorded_report(data_dir=None, path: Path = REPORT) -> dict:
    """The last `grade --benchmark` run kept in the repo (data_dir: recordings elsewhere; not used here)."""
    return json.loads(Path(path).read_text())


def headline(rep: dict) -> dict:
    return {"grading_seconds_30_submissions": rep["seconds"] if rep["submissions"] == 30 else None,
            "master_score_pct": rep["master_score_pct"], "blank_score_pct": rep["blank_score_pct"],
            "cheat_max_score_pct": rep["cheat_max_score_pct"], "poison_isolated": rep["poison_isolated"],
            "hang_partial_credit": rep["hang_partial_credit"],
            # a hostile class (issue 37): measured inside the sandbox, and every attack graded beside honest work
            "sandbox_capabilities": rep.get("sandbox_capabilities"),
            "sandbox_uid_nonzero": rep.get("sandbox_uid_nonzero"),
            "resource_limits": rep.get("resource_limits"),
            "attack_fixtures": rep.get("attack_fixtures"), "attack_fixtures_held": rep.get("attack_fixtures_held"),
            "zero_knowledge_score_pct": rep.get("zero_knowledge_score_pct"),
            "one_bad_submission_stops_run": rep.get("one_bad_submission_stops_run"),
            # the grader's own side (issue 56): linear reads of learner bytes, bounded memory, a terminal-safe
            # grade book, honest variants at full marks, neighbours unharmed, the limits without cgroups
            "grader_parse_seconds_max": rep.get("grader_parse_seconds_max"),
            "grader_peak_rss_mb_flood": rep.get("grader_peak_rss_mb_flood"),
            "control_chars_in_outputs": rep.get("control_chars_in_outputs"),
            "honest_variants": rep.get("honest_variants"),
            "honest_variants_full_marks": rep.get("honest_variants_full_marks"),
            "neighbour_points_lost": rep.get("neighbour_points_lost"),
            "limits_without_cgroups": rep.get("limits_without_cgroups")}


def release_report(data_dir=None, path: Path = RELEASE) -> dict:
    """The last `make release` kept in the repo: the learners' tree, read for the instructor's material."""
    return json.loads(Path(path).read_text())


def release_headline(rep: dict) -> dict:
    return {"learner_tree_solution_leaks": rep["solution_leaks"]}
