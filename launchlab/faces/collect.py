"""Step 1 of grading, run inside the sandbox (launchlab.faces.sandbox): execute one submitted notebook and write
its answers as plain JSON values. Nothing here judges an answer; the hidden tests run later, in the grader's own
process, over this file (launchlab.faces.grading).

    python -m launchlab.faces.collect NOTEBOOK OUT.json NAME [NAME ...] [--cell-timeout S]

Every code cell runs, in order, in one kernel; a cell that raises or runs past its time limit is recorded (its
step, the exception's name and message) and the next cell runs anyway, so a hang or an error costs the step it
is in (and the steps that use its result), not the notebook. otter's own cells (the `grader` it makes and its
`grader.check` calls) are left out: they are the learner's formative checks, not the grade, and a notebook
whose editor dropped otter's metadata is graded all the same.

The answers are read by one cell appended at the end: each named variable as a plain value -- None, a bool,
an int, a float, a str, and lists and dicts (str keys) of them; a tuple becomes a list, a set a sorted list,
a NumPy scalar its Python value. Anything else (an object of the learner's own class, whatever its `__eq__`
says) is recorded as not an answer. What that cell prints is the only thing read back.
"""
from __future__ import annotations

import json
import re
import sys

MARK = "LAUNCHLAB-ANSWERS "
OTTER_CELL = re.compile(r"^\s*(import otter\b|grader\s*=\s*otter\.|grader\.check\()", re.M)

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
    """The lab step each cell belongs to: the question of the `## Step N` heading above it (q1 ... q8)."""
    out, step = [], None
    for c in cells:
        if c.cell_type == "markdown":
            m = re.match(r"\s*##\s*Step\s+(\d+)", "".join(c.source))
            if m:
                step = f"q{m.group(1)}"
        out.append(step)
    return out


def collect(path: str, out: str, names: list[str], cell_timeout: float = 120) -> dict:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if not (c.cell_type == "code" and OTTER_CELL.search("".join(c.source)))]
    owner = steps(nb.cells)
    nb.cells.append(nbformat.v4.new_code_cell(READ_ANSWERS % (MARK, list(names))))
    client = NotebookClient(nb, timeout=cell_timeout, kernel_name="python3", allow_errors=True,
                            interrupt_on_timeout=True, record_timing=False)
    events = []
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, i)
            except CellTimeoutError:
                events.append({"cell": i, "step": owner[i] if i < len(owner) else None, "error": "timeout",
                               "message": f"the cell ran past its time limit ({cell_timeout:.0f} s) and was stopped"})
            except DeadKernelError as e:
                events.append({"cell": i, "step": owner[i] if i < len(owner) else None, "error": "DeadKernelError",
                               "message": str(e)[:300]})
                break
            for o in cell.get("outputs", []):
                if o.get("output_type") != "error" or i >= len(owner):
                    continue
                if o.get("ename") == "KeyboardInterrupt":          # how nbclient stops a cell past its limit
                    events.append({"cell": i, "step": owner[i], "error": "timeout",
                                   "message": f"the cell ran past its time limit ({cell_timeout:.0f} s) and was "
                                              f"stopped"})
                else:
                    events.append({"cell": i, "step": owner[i], "error": o.get("ename", ""),
                                   "message": str(o.get("evalue", ""))[:300], "source": "".join(cell.source)[:400]})
    last = nb.cells[-1]
    text = "".join(o.get("text", "") for o in last.get("outputs", []) if o.get("output_type") == "stream")
    answers = {}
    for line in text.splitlines():
        if line.startswith(MARK):
            try:
                answers = json.loads(line[len(MARK):])
            except ValueError:
                answers = {}
    result = {"answers": answers, "events": events}
    with open(out, "w") as f:
        json.dump(result, f)
    return result


def main(argv: list[str]) -> int:
    timeout = 120.0
    if "--cell-timeout" in argv:
        i = argv.index("--cell-timeout")
        timeout = float(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    path, out, *names = argv
    collect(path, out, names, timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
