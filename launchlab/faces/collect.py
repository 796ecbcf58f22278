"""Step 1 of grading, run inside the sandbox (launchlab.faces.sandbox): execute one submitted notebook and write
its answers as plain JSON values. Nothing here judges an answer; the hidden tests run later, in the grader's own
process, over this file (launchlab.faces.grading).

    python -m launchlab.faces.collect NOTEBOOK OUT.json NAME [NAME ...] [--cell-timeout S]

Every code cell runs, in order, in one kernel; a cell that raises or runs past its time limit is recorded (its
step, the exception's name and message) and the next cell runs anyway, so a hang or an error costs the step it
is in (and the steps that use its result), not the notebook. otter's own cells (the `grader` it makes and its
`grader.check` calls) are left out: they are the learner's formative checks, not the grade, and a notebook
whose editor dropped otter's metadata is graded all the same.

The answers are read after the last cell of each step (and written, one JSON line per reading, to OUT or to
the descriptor `--answers-fd` names), so a run stopped from outside keeps every step it finished. A cell stopped
at its time limit while it waited for a CPU more than half that time (the machine was busy, not the cell slow:
/proc/PID/schedstat) runs once more. The answers are read by a cell executed after each step: each named variable as a plain value -- None, a bool,
an int, a float, a str, and lists and dicts (str keys) of them; a tuple becomes a list, a set a sorted list,
a NumPy scalar its Python value. Anything else (an object of the learner's own class, whatever its `__eq__`
says) is recorded as not an answer. What that cell prints is the only thing read back.
"""
from __future__ import annotations

import json
import os
import sys
import time

from launchlab.faces import scan

MARK = "LAUNCHLAB-ANSWERS "


def otter_cell(cell) -> bool:
    """A code cell of otter's own (launchlab.faces.scan.otter_cell: a linear look at each line's start)."""
    return cell.cell_type == "code" and scan.otter_cell("".join(cell.source))

READ_ANSWERS = r'''
def __launchlab_plain(v, depth=0):
    import math
    if depth > 20:
        raise TypeError("nested too deep")
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return v
    if t is float:
        return v if math.isfinite(v) else None
    if t.__module__ == "numpy" and hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return __launchlab_plain(v.item(), depth + 1)
    if t in (list, tuple):
        return [__launchlab_plain(x, depth + 1) for x in v]
    if t in (set, frozenset):
        return sorted((__launchlab_plain(x, depth + 1) for x in v), key=lambda x: (str(type(x)), str(x)))
    if t is dict:
        if not all(type(k) is str for k in v):
            raise TypeError("a dict with keys that are not str")
        return {k: __launchlab_plain(x, depth + 1) for k, x in v.items()}
    raise TypeError(f"a {t.__name__}")


def __launchlab_answers(names):
    import json
    out = {}
    for n in names:
        if n not in globals():
            out[n] = {"__missing__": "not defined"}
            continue
        v = globals()[n]
        if v is Ellipsis:
            out[n] = {"__missing__": "not answered yet (still ...)"}
            continue
        try:
            out[n] = {"value": __launchlab_plain(v)}
        except Exception as e:
            out[n] = {"__missing__": f"not an answer: {e}"}
    print("%s" + json.dumps(out))


__launchlab_answers(%r)
'''


def steps(cells) -> list[str | None]:
    """The lab step each cell belongs to: the question of the `## Step N` heading above it (q1 ... q9); a `##`
    heading of another name ends the steps (the ungraded explorers after step 9 are nobody's)."""
    out, step = [], None
    for c in cells:
        if c.cell_type == "markdown":
            said = scan.step_heading("".join(c.source))
            if said is not None:
                step = said or None
        out.append(step)
    return out


def _waited(pid: int) -> float:
    """Seconds the process's threads have spent runnable but waiting for a CPU (/proc/PID/task/*/schedstat)."""
    total = 0
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    total += int(f.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue
    except OSError:
        return 0.0
    return total / 1e9


CONTENDED = 0.5          # a cell that waited for a CPU this share of its time was starved, not slow: run it again


def collect(path: str, out, names: list[str], cell_timeout: float = 120) -> dict:
    """Run the notebook and write its answers to `out` (a path, or a file object): one JSON line after each
    step, so a run stopped from outside keeps the answers of every step it finished."""
    # jsonschema (under nbformat) imports rfc3987_syntax if it is there only to check "iri" strings, which a
    # notebook's schema never asks for; building its grammar costs 2.8 s per submission (measured, 2 CPUs)
    sys.modules.setdefault("rfc3987_syntax", None)
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    sink = open(out, "w") if isinstance(out, str) else out
    try:
        nb = nbformat.read(path, as_version=4)
        if not isinstance(nb.get("cells"), list):
            raise ValueError("no list of cells")
        nb.cells = [c for c in nb.cells if not otter_cell(c)]
    except Exception as e:                       # noqa: BLE001 - any file that is not a notebook says why, once
        sink.write("\n" + json.dumps({"answers": {}, "events": [], "final": True,
                                      "not_a_notebook": f"{type(e).__name__}: {str(e)[:160]}"}) + "\n")
        sink.flush()
        return {"answers": {}, "events": []}
    owner = steps(nb.cells)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    last_of_step = {i for k, i in enumerate(code) if k + 1 == len(code) or owner[code[k + 1]] != owner[i]}
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name="python3", allow_errors=True,
                            interrupt_on_timeout=True, record_timing=False)
    events: list = []
    answers: dict = {}

    def emit(final: bool) -> None:
        # a newline first: a line the notebook's own code left unfinished on this channel ends before ours
        sink.write("\n" + json.dumps({"answers": answers, "events": events, "final": final}) + "\n")
        sink.flush()

    def read_answers(k: int) -> None:
        cell = nbformat.v4.new_code_cell(READ_ANSWERS % (MARK, list(names)))
        nb.cells.append(cell)                    # nbclient writes a cell's outputs back at its index
        try:
            client.execute_cell(cell, len(nb.cells) - 1)
        except (CellTimeoutError, DeadKernelError):
            return
        finally:
            nb.cells.pop()
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        for line in text.splitlines():
            if line.startswith(MARK):
                try:
                    got = json.loads(line[len(MARK):])
                except ValueError:
                    continue
                if isinstance(got, dict):        # a later reading wins, except where it lost a value
                    for n, v in got.items():
                        if "value" in v or "value" not in answers.get(n, {}):
                            answers[n] = v

    def timed_out(i: int) -> dict:
        return {"cell": i, "step": owner[i], "error": "timeout",
                "message": f"the cell ran past its time limit ({cell_timeout:.0f} s) and was stopped"}

    with client.setup_kernel():
        kpid = getattr(getattr(client.km, "provisioner", None), "pid", None)
        for i in code:
            cell = nb.cells[i]
            for attempt in (0, 1):
                t0 = time.monotonic()
                w0 = _waited(kpid) if kpid else 0.0
                stopped = False
                try:
                    client.execute_cell(cell, i)
                except CellTimeoutError:
                    stopped = True
                except DeadKernelError as e:
                    events.append({"cell": i, "step": owner[i], "error": "DeadKernelError",
                                   "message": str(e)[:300]})
                    emit(True)
                    return {"answers": answers, "events": events}
                errs = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
                stopped = stopped or any(o.get("ename") == "KeyboardInterrupt" for o in errs)  # nbclient's stop
                wall = time.monotonic() - t0
                starved = kpid and (_waited(kpid) - w0) > CONTENDED * wall
                if stopped and starved and attempt == 0:
                    events.append({"cell": i, "step": owner[i], "error": "contended",
                                   "message": "the machine was busy: the cell waited for a CPU more than half its "
                                              "time, so it ran again"})
                    cell.outputs = []
                    continue
                if stopped:
                    events.append(timed_out(i))
                else:
                    for o in errs:
                        events.append({"cell": i, "step": owner[i], "error": o.get("ename", ""),
                                       "message": str(o.get("evalue", ""))[:300],
                                       "source": "".join(cell.source)[:400]})
                break
            if i in last_of_step:
                read_answers(i)
                emit(i == code[-1])
        if not code:
            read_answers(0)
            emit(True)
    return {"answers": answers, "events": events}


def main(argv: list[str]) -> int:
    timeout = 120.0
    if "--cell-timeout" in argv:
        i = argv.index("--cell-timeout")
        timeout = float(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    fd = None
    if "--answers-fd" in argv:
        i = argv.index("--answers-fd")
        fd = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    path, out, *names = argv
    if fd is not None:
        with os.fdopen(fd, "w") as sink:
            collect(path, sink, names, timeout)
    else:
        collect(path, out, names, timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
