"""Step 2 of grading under a time limit: the instructor's tests scored in a process of their own, one question at
a time, so an answer built to make a check slow (a regex fed 60,000 characters, a list of a million rows) costs
that question, never the grader. The grader (launchlab.faces.grading.checks_isolated) writes one JSON object --
{"tests": path of lab_tests.py, "answers": {...}, "ref": {...}} -- to this script's stdin, and reads one JSON line
per question back: {"q": "q1", "checks": [[points, passed, message], ...]}. Stdlib only, run as `python -I`.
"""
from __future__ import annotations

import importlib.util
import json
import sys


def main() -> int:
    job = json.loads(sys.stdin.read())
    spec = importlib.util.spec_from_file_location("lab_solutions.lab_tests_isolated", job["tests"])
    t = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(t)
    answers, ref = job["answers"], job["ref"]
    for q in t.QUESTIONS:
        checks = t.score_one(q, answers, ref)
        sys.stdout.write(json.dumps({"q": q, "checks": checks}) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
