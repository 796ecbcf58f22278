"""Every refusal a learner's edit meets, measured where the learner meets it (issue 58): each your-turn cell's
geometry and the lab's step 6 plan written wrong in the ways a learner might, run in a notebook by nbclient
(replay), each refusal's box (launchlab.core.refusal) counted in the lines it takes on the screen.

    python -m launchlab refusals [--write] [--only NB]     # the table; --write: data/reading/refusals.json

The summary's `hands.refusal_lines_max` is the committed measure's longest refusal (at most LIMIT lines).
The course's exercises never raise: a wrong or unparsable answer is told in the check's printed feedback.
"""
from __future__ import annotations

import json
import os
import re

from launchlab.core import paths

LIMIT = 8              # the most lines a refusal may take on the learner's screen (issue 58)
REPORT = paths.ROOT / "data" / "reading" / "refusals.json"

# ------------------------------------------------------------------ measured: every refusal a your-turn edit meets
# What a learner plausibly types into a your-turn cell's geometry line that the course refuses: no blocks, no
# threads, more threads than a block holds, a block that is not whole warps, a negative grid, a float, and (where
# the cell has one) more shared memory than the H200's opt-in limit.
EDITS = ("grid, block = 0, 128", "grid, block = 1, 0", "grid, block = 1, 2048", "grid, block = 1, 100",
         "grid, block = -4, 128", "grid, block = 2.5, 128")
SMEM_EDITS = ("grid, block, smem = 265, 64, 300 * 1024", "grid, block, smem = 265, 64, -1")
# The lab's step 6 plan (notebooks/09, its `plan` cell), written wrong in the ways a learner might: no threads, more
# than a block holds, no elements per thread, a float grid, and a grid that does not cover n.
PLAN = "    block = ...\n    ept = ...\n    grid = ..."
PLAN_EDITS = ("    block = 0\n    ept = 1\n    grid = n", "    block = 2048\n    ept = 1\n    grid = n // 2048 + 1",
              "    block = 128\n    ept = 0\n    grid = n // 128", "    block = 128\n    ept = 1\n    grid = n / 128",
              "    block = 'a'\n    ept = 1\n    grid = 1")


def visible_lines(outputs: list) -> int:
    """Lines a learner sees for a cell's outputs, as rendered: a display's text (its plain copy mirrors the box
    without the collapsed traceback), a stream's lines, an error's traceback lines (ANSI colours removed)."""
    n = 0
    for o in outputs:
        kind = o.get("output_type")
        if kind in ("display_data", "execute_result"):
            text = o.get("data", {}).get("text/plain", "")
            n += len(("".join(text) if isinstance(text, list) else text).rstrip("\n").split("\n"))
        elif kind == "stream":
            n += len("".join(o.get("text", "")).rstrip("\n").split("\n"))
        elif kind == "error":
            n += sum(len(re.sub(r"\x1b\[[0-9;]*m", "", t).rstrip("\n").split("\n")) for t in o.get("traceback", []))
    return n


def _edited(source: str, edit: str) -> str:
    out = []
    for ln in source.split("\n"):
        if ln.lstrip().startswith("grid, block") and "=" in ln:
            ln = edit
        out.append(ln)
    return "\n".join(out)


def measure(names=None, timeout: int = 300) -> dict:
    """Run each notebook with a your-turn cell in replay (nbclient), with every edit appended after that cell and
    the cell itself run again last: each edit's error type and visible lines, and whether the kernel still ran the
    original launch after them."""
    import nbformat
    from nbclient import NotebookClient
    os.environ["LAUNCHLAB_MODE"] = "replay"
    cases, kept = [], {}
    for p in sorted((paths.ROOT / "notebooks").glob("[0-9][0-9]*.ipynb")):
        if names and not any(n in p.name for n in names):
            continue
        nb = nbformat.read(p, as_version=4)
        at = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "your-turn" in c.metadata.get("tags", [])]
        plan = [i for i, c in enumerate(nb.cells) if c.metadata.get("launchlab", {}).get("role") == "plan"]
        if not at and not plan:
            continue
        i = (at or plan)[0]
        cell = nb.cells[i]
        if at:
            edits = EDITS + (SMEM_EDITS if "smem" in cell.source.split("\n")[1] else ())
            tail = [nbformat.v4.new_code_cell(_edited(cell.source, e)) for e in edits]
        else:
            if PLAN not in cell.source:
                raise RuntimeError(f"{p.name}'s plan cell no longer holds {PLAN!r}: update refusals.PLAN")
            edits = PLAN_EDITS
            tail = [nbformat.v4.new_code_cell(cell.source.replace(PLAN, e)) for e in edits]
            cell = nbformat.v4.new_code_cell(cell.source.replace(PLAN, "    block = 256\n    ept = 1\n"
                                                                      "    grid = -(-n // 256)"))
        again = nbformat.v4.new_code_cell(cell.source)
        run = nbformat.v4.new_notebook(cells=nb.cells[:i + 1] + tail + [again], metadata=nb.metadata)
        NotebookClient(run, timeout=timeout, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(p.parent)}}).execute()
        for e, c in zip(edits, run.cells[i + 1:-1]):
            err = next((o for o in c.outputs if o.get("output_type") == "error"), None)
            boxed = any("launchlab-refusal" in "".join(o.get("data", {}).get("text/html", "")) for o in c.outputs)
            cases.append({"notebook": p.name, "edit": e, "error": err["ename"] if err else None, "boxed": boxed,
                          "lines": visible_lines(c.outputs)})
        kept[p.name] = not any(o.get("output_type") == "error" for o in run.cells[-1].outputs)
    return {"edits": list(EDITS), "smem_edits": list(SMEM_EDITS), "plan_edits": list(PLAN_EDITS), "cases": cases,
            "kernel_kept": kept,
            "max_lines": max((c["lines"] for c in cases if c["error"]), default=0)}


def write(r: dict) -> None:
    path = REPORT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(r, indent=1) + "\n")


def load() -> dict:
    path = REPORT
    if not path.exists():
        raise FileNotFoundError(f"no {path.name}: python -m launchlab refusals --write (replay, no GPU) makes it")
    return json.loads(path.read_text())


def table(r: dict) -> str:
    rows = [f"{'notebook':<36} {'edit':<44} {'refused with':<14} {'lines':>5}"]
    for c in r["cases"]:
        edit = " ".join(c["edit"].split())
        rows.append(f"{c['notebook']:<36} {edit[:44]:<44} {c['error'] or '(ran)':<14} {c['lines']:>5}")
    kept = sum(r["kernel_kept"].values())
    rows.append(f"longest refusal: {r['max_lines']} visible lines; the kernel ran the cell's own launch after the "
                f"refusals in {kept} of {len(r['kernel_kept'])} notebooks")
    return "\n".join(rows)


def main(write_report: bool = False, names=None) -> int:
    r = measure(names)
    print(table(r))
    bad = [c for c in r["cases"] if c["error"] and not c["boxed"]]
    for c in bad:
        print(f"not boxed: {c['notebook']} {c['edit']!r} ({c['error']})")
    if write_report and not names:
        write(r)
        print(f"wrote {REPORT.relative_to(paths.ROOT)}")
    return 1 if bad or not all(r["kernel_kept"].values()) or r["max_lines"] > LIMIT else 0

