"""launchlab.faces.reliability reads the sweep's reports. Each (program, tool) pair is decided by one complete run: the
one with the libraries uninstrumented, else the full run when it printed (and so attributed) every report.
sanitizer_errors is a count only when every pair is decided; a failed run is listed, never hidden."""
import json
from pathlib import Path

from launchlab.faces import reliability

ROOT = Path(__file__).resolve().parent.parent


def run(tool, course=0, lib=0, errors=0, same=True, instrumented=True, not_printed=0, target="decode"):
    return {"target": target, "tool": tool, "errors": errors, "in_course_kernels": course, "in_libraries": lib,
            "output_as_without_sanitizer": same, "libraries_instrumented": instrumented, "not_printed": not_printed}


def test_library_reports_are_not_the_course_kernels_errors():
    h = reliability.sanitizer([run("memcheck"), run("racecheck", lib=64, errors=64)])
    assert h["sanitizer_errors"] == 0 and h["sanitizer_reports_outside_course_kernels"] == 64
    assert reliability.sanitizer([run("memcheck", course=2, errors=2)])["sanitizer_errors"] == 2


def test_a_truncated_full_run_needs_the_course_only_run_to_decide():
    truncated = run("initcheck", lib=100, errors=36208, not_printed=36108)
    h = reliability.sanitizer([truncated])
    assert h["sanitizer_errors"] is None and h["sanitizer_undecided"] == 1
    h = reliability.sanitizer([truncated, run("initcheck", instrumented=False)])
    assert h["sanitizer_errors"] == 0 and h["sanitizer_reports_outside_course_kernels"] == 36208
    h = reliability.sanitizer([truncated, run("initcheck", course=3, errors=3, instrumented=False)])
    assert h["sanitizer_errors"] == 3


def test_a_run_that_died_or_printed_something_else_is_listed_and_decides_nothing():
    for bad in (run("synccheck", errors=None), run("synccheck", same=False)):
        h = reliability.sanitizer([run("memcheck"), bad])
        assert h["sanitizer_errors"] is None and h["sanitizer_runs_failed"] == 1
        assert reliability.sanitizer_failures([run("memcheck"), bad]) == ["decode synccheck"]
    crashed = run("racecheck", errors=1, same=False, instrumented=False)
    h = reliability.sanitizer([run("racecheck", lib=64, errors=64), crashed])
    assert h["sanitizer_errors"] == 0 and h["sanitizer_runs_failed"] == 1
    assert reliability.sanitizer_failures([crashed]) == ["decode racecheck (libraries uninstrumented)"]


def test_the_recorded_h200_sweep():
    h = reliability.sanitizer(json.loads((ROOT / "data" / "sanitizer" / "sweep.json").read_text())["runs"])
    assert h["sanitizer_errors"] == 0 and "sanitizer_undecided" not in h
