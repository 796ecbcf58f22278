"""Execute notebooks with nbclient (live on a GPU machine) and compare every `nbval-check-output` cell's
text with the committed notebook, byte for byte.

    python tools/live_check.py notebooks/0*.ipynb      ->  one line per checked cell, exit 1 on a difference

A second instrument beside `pytest --nbval-lax`: on the H200 image, nbval run over all notebooks in one
session reported three of notebook 02's checked cells with the single spaces between f-string fields missing,
while this runner (and nbval run over notebook 02 alone with the image's pytest plugins off) captured the
committed bytes. Where the two disagree, look at the captured text: it is printed here.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

TAG = "nbval-check-output"


def stream_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"
                   and o.get("name") == "stdout")


def check(path: Path) -> int:
    ref = nbformat.read(path, as_version=4)
    run = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(run, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    bad = 0
    for i, (a, b) in enumerate(zip(ref.cells, run.cells)):
        if a.cell_type != "code" or TAG not in a.metadata.get("tags", []):
            continue
        same = stream_text(a) == stream_text(b)
        bad += not same
        print(f"{path.name} cell {i}: {'same bytes' if same else 'DIFFERS'}")
        if not same:
            print("  committed:", repr(stream_text(a)[:300]), "\n  live:     ", repr(stream_text(b)[:300]))
    print(f"{path.name}: executed in {time.perf_counter() - t0:.0f} s, {bad} checked cell(s) differ")
    return bad


if __name__ == "__main__":
    sys.exit(1 if sum(check(Path(p)) for p in sys.argv[1:]) else 0)
