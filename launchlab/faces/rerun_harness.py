"""Inside the sandbox: a submission's notebook runs again through step 7, and what its plan does is read back.

    python -m launchlab.faces.rerun_harness JOB --report-fd N  < submission.ipynb   (launchlab.faces.rerun runs it)

The notebook is read here (rerun.cells: any nbformat version, otter's cells and the tests left out); every code
cell from the top through step 7 runs in one namespace, in order, as the learner's kernel ran them, each under a
time limit (CELL_SECONDS); one that raises is recorded and the next runs. The job (JSON) gives the widths to call
`plan` at and whether to stop after the step-6 cell that defines `plan` (the live re-run, on the GPU: there the
cells above step 6 give only the names they define -- imports, functions, classes, constants and lambdas
(`definitions`) -- since running them live would measure the whole lab again, about a minute and a half). Then
`plan(n)` is called at every width, each call under a time limit, and its outputs, the `arms` the cells defined
and the order fix.rep() measured are written as one marked JSON line, plain values only, to descriptor N (what
the cells print goes to stdout, which the grader drains and caps). The grader (launchlab.faces.rerun) judges them.
"""
from __future__ import annotations

import json
import os
import signal
import sys

from launchlab.faces import rerun

CALL_SECONDS = 5
CELL_SECONDS = 30                 # one cell of the re-run (the lab's slowest, step 4 live: a few seconds)


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


_limit = [CALL_SECONDS]


def _alarm(*_):
    raise _Late(f"the call ran past {_limit[0]} s")


def _arm(seconds: int) -> None:
    _limit[0] = seconds
    signal.alarm(seconds)


def definitions(src: str) -> str:
    """The top-level statements of a cell that only define a name: imports, def, class, and assignments of a
    constant (what ast.literal_eval reads) or a lambda. Anything else -- a measurement, a print -- is left out."""
    import ast
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return ""
    keep = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            keep.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if isinstance(node.value, ast.Lambda):
                keep.append(node)
                continue
            try:
                ast.literal_eval(node.value)
                keep.append(node)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                pass
    return ast.unparse(ast.Module(body=keep, type_ignores=[]))


def main(argv: list[str]) -> int:
    i = argv.index("--report-fd")
    fd = int(argv[i + 1])
    job = json.loads(argv[0])
    report: dict = {"plans": {}, "arms": None, "order": None, "errors": []}
    try:
        todo = rerun.cells(sys.stdin.buffer.read())
    except Exception as e:                      # noqa: BLE001 - not a notebook: said, and nothing runs
        report["errors"].append(f"the notebook could not be read: {type(e).__name__}: {str(e)[:200]}")
        todo = []
    ns: dict = {"__name__": "__main__"}
    signal.signal(signal.SIGALRM, _alarm)
    for label, src in todo:
        if job.get("upto_plan") and not label.startswith(("step 6,", "step 7,")):
            src = definitions(src)
        _arm(CELL_SECONDS)
        try:
            exec(compile(src, f"<{label}>", "exec"), ns)
        except BaseException as e:          # noqa: BLE001 - the learner's cell failing is a fact to report
            report["errors"].append(f"{label}: {type(e).__name__}: {str(e)[:200]}")
        finally:
            signal.alarm(0)
        if job.get("upto_plan") and label.startswith("step 6,") and callable(ns.get("plan")):
            break
    plan = ns.get("plan")
    for n in job["widths"]:
        if not callable(plan):
            report["plans"][str(n)] = {"error": "no function `plan` was defined by the step's cells"}
            continue
        _arm(CALL_SECONDS)
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
    with os.fdopen(fd, "w") as out:
        out.write("\n" + rerun.MARK + json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
