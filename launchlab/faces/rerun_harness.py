"""Inside the sandbox: a submission's step-6 and step-7 cells run again, and what its plan does read back.

    python -m launchlab.faces.rerun_harness  < job.json       (launchlab.faces.rerun runs it)

The job names the cells (their sources), the widths to call `plan` at, and whether to stop after the cell that
defines `plan` (the live re-run: the plan's own cell, on the GPU). Each cell runs in one namespace, in order; one
that raises is recorded and the next runs. Then `plan(n)` is called at every width, each call under a time limit,
and its outputs, the `arms` the cells defined and the order fix.rep() measured are printed as one JSON line
(marked), as plain values. The grader (launchlab.faces.rerun) judges them.
"""
from __future__ import annotations

import json
import signal
import sys

from launchlab.faces import rerun

CALL_SECONDS = 5


def _plain(v, depth: int = 0):
    if depth > 8:
        raise TypeError("nested too deep")
    if v is None or type(v) in (bool, str):
        return v
    if type(v) is int:
        return v
    if type(v).__module__ == "numpy" and hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return _plain(v.item(), depth + 1)
    if type(v) in (list, tuple):
        return [_plain(x, depth + 1) for x in v]
    if type(v) is dict:
        return {str(k): _plain(x, depth + 1) for k, x in v.items()}
    raise TypeError(f"a {type(v).__name__}")


class _Late(Exception):
    pass


def _alarm(*_):
    raise _Late(f"the call ran past {CALL_SECONDS} s")


def main() -> int:
    job = json.loads(sys.stdin.read())
    report: dict = {"plans": {}, "arms": None, "order": None, "errors": []}
    ns: dict = {"__name__": "__main__"}
    exec("import statistics", ns)                      # the lab's step 4 imports it for every later cell
    signal.signal(signal.SIGALRM, _alarm)
    for step in ("6", "7"):
        for i, src in enumerate(job["cells"].get(step, [])):
            try:
                exec(compile(src, f"<step {step}, cell {i + 1}>", "exec"), ns)
            except BaseException as e:          # noqa: BLE001 - the learner's cell failing is a fact to report
                report["errors"].append(f"step {step}, cell {i + 1}: {type(e).__name__}: {str(e)[:200]}")
            if job.get("upto_plan") and callable(ns.get("plan")):
                break
        if job.get("upto_plan"):
            break
    plan = ns.get("plan")
    for n in job["widths"]:
        if not callable(plan):
            report["plans"][str(n)] = {"error": "no function `plan` was defined by the step's cells"}
            continue
        signal.alarm(CALL_SECONDS)
        try:
            report["plans"][str(n)] = {"plan": _plain(list(plan(n)))}
        except BaseException as e:              # noqa: BLE001
            report["plans"][str(n)] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
        finally:
            signal.alarm(0)
    try:
        report["arms"] = _plain(ns.get("arms"))
    except TypeError as e:
        report["errors"].append(f"arms: {e}")
    try:
        report["order"] = rerun.lab_fix().order()
    except Exception as e:                      # noqa: BLE001
        report["errors"].append(f"order: {type(e).__name__}: {e}")
    try:
        if job.get("upto_plan"):                   # the live re-run, on the GPU: say which device it saw
            import cupy as cp
            report["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as e:                      # noqa: BLE001
        report["errors"].append(f"device: {type(e).__name__}: {e}")
    sys.stdout.flush()
    print(rerun.MARK + json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
