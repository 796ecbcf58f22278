"""Audit any program's launch geometry: the lab's eight steps pointed at code the course did not write (issue 40).

    from launchlab import audit
    trace = audit.load("my_step.trace.json.gz")      # torch.profiler's Chrome trace, or a CUPTI record
    rows = audit.table(trace)                         # one row per (kernel, grid, block), the lab's columns
    print(audit.text(trace, rows))                    # ranked by idle SM-time

`launches` reads the records (step 1), `shapes` builds the table and the ranking (steps 2-3); `run(fn, steps=8)`
and `run_script(argv)` profile a callable or a program live (`profilers`), `step()` marks a step of a program under
audit (`with audit.step(): ...`); `floors` is step 4 (ncu on the top offenders); `sites` greps a source tree for the
launch sites whose grid is built from a sharded dimension (step 8): `audit.grep(path, "head")`.
"""
from launchlab.audit.launches import STEP_MARK, AuditError, Launch, Trace, from_cupti, from_torch, load
from launchlab.audit.profilers import run, run_script, step
from launchlab.audit.shapes import Shape, idle_share, ranking, table, text, to_csv, to_json
from launchlab.audit.sites import grep

__all__ = ["STEP_MARK", "AuditError", "Launch", "Shape", "Trace", "from_cupti", "from_torch", "grep", "idle_share",
           "load", "ranking", "run", "run_script", "step", "table", "text", "to_csv", "to_json"]
