"""The reliability sweep's figures (issue 14), read from the reports its tools leave in data/:

    data/hub/report.json      `make hub-test`: a local JupyterHub, learners running notebook 01 and the lab's
                              first steps through their own servers at once (tests/hub/run_hub.py)
    data/course/replay.json   `make course` in replay: the whole course's wall time on this machine, and every
                              figure found in its HTML in Chromium (tests/browser/course_html.py)
    data/course/live.json     the same on a GPU (the H200)
    data/reliability/bad_inputs.json   `python -m launchlab badinputs --docs`: the bad inputs refused, with the fix
                              named and the session working after (GPU cases only where it ran live)
    data/sanitizer/sweep.json `tools/sanitize_sweep.py` on a GPU: the four compute-sanitizer tools over the
                              self-tests and a decode token, each report attributed to a kernel

Each report is written by the run that measured it, with its date; nothing here measures.
"""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HUB_REPORT = ROOT / "data" / "hub" / "report.json"
COURSE_DIR = ROOT / "data" / "course"
BAD_INPUTS = ROOT / "data" / "reliability" / "bad_inputs.json"
SWEEP = ROOT / "data" / "sanitizer" / "sweep.json"


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


def reports() -> dict:
    return {"hub": hub_report(), "course_replay": course_report("replay"), "course_live": course_report("live"),
            "bad_inputs": _optional(BAD_INPUTS), "sweep": _optional(SWEEP)}


def headline(r: dict) -> dict:
    hub = r["hub"]
    out = {"hub_learners_ok": hub["learners_ok"], "hub_learners": hub["learners"],
           "hub_stopped_cleanly": hub["hub_stopped_cleanly"], "hub_test_seconds": hub["seconds"]}
    for m in ("replay", "live"):
        c = r.get(f"course_{m}")
        if c:
            out[f"course_{m}_seconds"] = c["seconds"]
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
        out["sanitizer_errors"] = sum(x["in_course_kernels"] for x in w["runs"])
        out["sanitizer_reports_in_libraries"] = sum(x["in_libraries"] for x in w["runs"])
    return out
