"""The reliability sweep's figures (issue 14), read from the reports its tools leave in data/:

    data/hub/report.json      `make hub-test`: a local JupyterHub, learners running notebook 01 and the lab's
                              first steps through their own servers at once (tests/hub/run_hub.py)

Each report is written by the run that measured it, with its date; nothing here measures.
"""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HUB_REPORT = ROOT / "data" / "hub" / "report.json"


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


def headline(hub: dict) -> dict:
    return {"hub_learners_ok": hub["learners_ok"], "hub_learners": hub["learners"],
            "hub_stopped_cleanly": hub["hub_stopped_cleanly"], "hub_test_seconds": hub["seconds"]}
