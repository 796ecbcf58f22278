"""The reliability sweep's figures (issue 14), read from the reports its tools leave in data/:

    data/hub/report.json      `make hub-test`: a local JupyterHub, learners running notebook 01 and the lab's
                              first steps through their own servers at once (tests/hub/run_hub.py)
    data/course/replay.json   `make course` in replay: the whole course's wall time on this machine, and every
                              figure found in its HTML in Chromium (tests/browser/course_html.py)
    data/course/live.json     the same on a GPU (the H200)
    data/course/live_runs.json every live run of the course, each with its machine's boot id and the code it ran:
                              course_live_seconds is the slowest run of the latest code, not the median one
    data/reliability/bad_inputs.json   `python -m launchlab badinputs --docs`: the bad inputs refused, with the fix
                              named and the session working after (GPU cases only where it ran live)
    data/sanitizer/sweep.json `tools/sanitize_sweep.py` on a GPU: the four compute-sanitizer tools over the
                              self-tests and a decode token, each report attributed to a kernel; a run that
                              cannot work under a tool is left out with its reason, not counted as failed
    data/grading/report.json  `grade --benchmark`: which bwrap the grading sandbox used (sandbox_source)

Each report is written by the run that measured it, with its date; nothing here measures.
"""
from __future__ import annotations

import json
from pathlib import Path

from launchlab.core import paths

ROOT = paths.ROOT
HUB_REPORT = ROOT / "data" / "hub" / "report.json"
COURSE_DIR = ROOT / "data" / "course"
BAD_INPUTS = ROOT / "data" / "reliability" / "bad_inputs.json"
SWEEP = ROOT / "data" / "sanitizer" / "sweep.json"
GRADING = ROOT / "data" / "grading" / "report.json"


class ReliabilityError(RuntimeError):
    pass


def hub_report(path: Path = HUB_REPORT) -> dict:
    if not path.exists():
        raise ReliabilityError(f"{path} is missing: run `make hub-test` (a local JupyterHub, three learners)")
    r = json.loads(path.read_text())
    for k in ("learners", "learners_ok", "hub_stopped_cleanly", "seconds", "rows", "date"):
        if k not in r:
            raise ReliabilityError(f"{path} has no {k!r}: re-run `make hub-test`")
    return r


def course_report(mode: str, directory: Path = COURSE_DIR) -> dict | None:
    """`make course`'s report for one mode, or None if that mode has not been run into data/course/."""
    p = directory / f"{mode}.json"
    if not p.exists():
        return None
    r = json.loads(p.read_text())
    if r.get("mode") != mode or "seconds" not in r:
        raise ReliabilityError(f"{p} is not a `make course` report for {mode} mode: re-run `make course`")
    return r


def _optional(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def live_runs(directory: Path = COURSE_DIR) -> list[dict]:
    """The live course's runs on the code of the latest one (data/course/live_runs.json), oldest first."""
    p = directory / "live_runs.json"
    if not p.exists():
        return []
    runs = json.loads(p.read_text())["runs"]
    return [r for r in runs if r["code"] == runs[-1]["code"]] if runs else []


def reports() -> dict:
    return {"hub": hub_report(), "course_replay": course_report("replay"), "course_live": course_report("live"),
            "course_live_runs": live_runs(),
            "bad_inputs": _optional(BAD_INPUTS), "sweep": _optional(SWEEP), "grading": _optional(GRADING)}


def headline(r: dict) -> dict:
    hub = r["hub"]
    out = {"hub_learners_ok": hub["learners_ok"], "hub_learners": hub["learners"],
           "hub_stopped_cleanly": hub["hub_stopped_cleanly"], "hub_test_seconds": hub["seconds"]}
    for m in ("replay", "live"):
        c = r.get(f"course_{m}")
        if c:
            out[f"course_{m}_seconds"] = c["seconds"]
            out[f"course_{m}_within_limit"] = c["seconds"] <= c["limit_seconds"]
            if all("cells_over_wait_without_bar" in n for n in c["notebooks"] if n.get("ok")):
                out[f"course_{m}_cells_waiting_without_progress"] = sum(
                    len(n["cells_over_wait_without_bar"]) for n in c["notebooks"] if n.get("ok"))
                out[f"course_{m}_longest_cell_seconds"] = max((n["longest_cell_seconds"] for n in c["notebooks"]
                                                               if n.get("ok")), default=None)
            runs = r.get(f"course_{m}_runs")
            if runs:                      # every run of this code within its limit, the slowest one shown
                out[f"course_{m}_seconds_runs"] = [x["seconds"] for x in runs]
                out[f"course_{m}_seconds"] = max(x["seconds"] for x in runs)
                out[f"course_{m}_within_limit"] = all(x["seconds"] <= x["limit_seconds"] and x["ok"] for x in runs)
                out[f"course_{m}_fresh_machines"] = len({x["boot_id"] for x in runs})
            html = c.get("html_in_chromium")
            if html is not None:
                out[f"course_{m}_figures_in_chromium"] = sum(x["decoded"] for x in html)
                out[f"course_{m}_figures_missing"] = sum(x["figures"] - x["decoded"] for x in html)
    b = r.get("bad_inputs")
    if b:
        out["bad_inputs_rejected"] = b["rejected"]
        out["bad_inputs_cases"] = b["cases"]
        out["bad_inputs_run"] = b["ran"]
    w = r.get("sweep")
    if w:
        out.update(sanitizer(w["runs"]))
        out["sanitizer_runs_left_out"] = len(w.get("left_out", []))
    g = r.get("grading")
    if g and "sandbox_source" in g:
        out["sandbox_source"] = g["sandbox_source"]
    return out


def _complete(run: dict) -> bool:
    """A run that reached its summary and whose program printed what it prints without a sanitizer."""
    return run["errors"] is not None and run.get("output_as_without_sanitizer", False)


def sanitizer(runs: list[dict]) -> dict:
    """The sweep's verdict on the course's kernels. Each (program, tool) pair is decided by one run: the run
    with the libraries uninstrumented if it completed, else the full run if it completed and printed every
    report it counted (each one then attributed to a kernel). sanitizer_errors is the course kernels' reports
    summed over the pairs, or None while any pair is undecided; the runs that failed are counted either way
    (sanitizer_failures names them)."""
    pairs: dict[tuple, list[dict]] = {}
    for x in runs:
        pairs.setdefault((x["target"], x["tool"]), []).append(x)
    errors, outside, undecided = 0, 0, []
    for (target, tool), rs in pairs.items():
        course_only = [x for x in rs if not x.get("libraries_instrumented", True) and _complete(x)]
        full = [x for x in rs if x.get("libraries_instrumented", True) and _complete(x)
                and x.get("not_printed", 0) == 0]
        deciding = (course_only or full or [None])[0]
        if deciding is None:
            undecided.append(f"{target} {tool}")
            continue
        errors += deciding["in_course_kernels"]
        if deciding["in_course_kernels"] == 0:
            outside += max((x["errors"] for x in rs if x.get("libraries_instrumented", True) and _complete(x)),
                           default=0)
    out = {"sanitizer_errors": None if undecided else errors, "sanitizer_runs": len(runs),
           "sanitizer_reports_outside_course_kernels": outside}
    if undecided:
        out["sanitizer_undecided"] = len(undecided)
    out["sanitizer_runs_failed"] = sum(not _complete(x) for x in runs)
    return out


def sanitizer_failures(runs: list[dict]) -> list[str]:
    """The runs that died or printed something other than the program does without a sanitizer, by name."""
    return [f"{x['target']} {x['tool']}{'' if x.get('libraries_instrumented', True) else ' (libraries uninstrumented)'}"
            for x in runs if not _complete(x)]
