"""The collector's one second chance (launchlab.faces.collect): a cell stopped at its time limit while it waited
for a CPU more than half that time -- the grading machine was busy, not the learner's cell slow -- runs once more,
and says so; a cell that was simply slow, or a kernel that had waited earlier in its life, gets no second run.

How long the kernel waited for a CPU is read from /proc/PID/task/*/schedstat (collect._waited); here it is set
(monkeypatch), so each side of the rule is met on purpose: waited the whole cell, waited nothing, waited long
before the cell and nothing during it."""
from __future__ import annotations

import io
import json
import time

import nbformat
import pytest

from launchlab.faces import collect

CELL_S = 3


def _run(tmp_path, monkeypatch, waited, source="import time\ntime.sleep(60)"):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## Step 1"), nbformat.v4.new_code_cell("x = 6 * 7"),
                nbformat.v4.new_markdown_cell("## Step 2"), nbformat.v4.new_code_cell(source)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "s.ipynb"
    nbformat.write(nb, str(path))
    monkeypatch.setattr(collect, "_waited", waited)
    sink = io.StringIO()
    got = collect.collect(str(path), sink, ["x"], cell_timeout=CELL_S)
    lines = [json.loads(x) for x in sink.getvalue().splitlines() if x.strip()]
    return got, lines


def _kinds(got):
    return [(e["step"], e["error"]) for e in got["events"]]


@pytest.mark.parametrize("name, waited, want", [
    # waited for a CPU all the time it ran (the clock itself): starved -> once more, then the limit holds
    ("busy machine", lambda pid: time.monotonic(), [("q2", "contended"), ("q2", "timeout")]),
    # waited nothing: the cell itself was slow -> no second run
    ("slow cell", lambda pid: 0.0, [("q2", "timeout")]),
    # waited 1,000 s before this cell and nothing during it: not starved now -> no second run
    ("waited long ago", lambda pid: 1000.0, [("q2", "timeout")]),
])
def test_only_a_cell_starved_of_a_cpu_runs_a_second_time(tmp_path, monkeypatch, name, waited, want):
    t0 = time.monotonic()
    got, lines = _run(tmp_path, monkeypatch, waited)
    took = time.monotonic() - t0
    assert _kinds(got) == want, name
    runs = len(want)                                         # each run of the sleeping cell costs its limit
    assert runs * CELL_S <= took < runs * CELL_S + 30, took
    assert got["answers"]["x"] == {"value": 42} and lines[-1]["final"] is True
    if ("q2", "contended") in want:
        assert got["events"][0]["message"] == ("the machine was busy: the cell waited for a CPU more than half its "
                                               "time, so it ran again")


def test_a_starved_cell_that_finishes_is_not_an_event(tmp_path, monkeypatch):
    got, _ = _run(tmp_path, monkeypatch, lambda pid: time.monotonic(), source="y = 1")
    assert got["events"] == [] and got["answers"]["x"] == {"value": 42}
