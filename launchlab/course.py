"""The notebooks as a whole: executed headless into HTML (`make course`), or refreshed in place with their
replay-mode outputs (`make notebooks`, what is committed).

A committed notebook carries the outputs of a replay run, so it reads well on a web page and nbval can compare
it. `refresh` makes those outputs the same way every time: the kernel runs in replay, the kernelspec is the
installed one ("Python 3 (ipykernel)", so JupyterLab does not open the notebook modified), every cell has an
id, and no widget state is stored: a saved explorer shows its static preview (the recorded figure and a "run
the cell" note), never a disconnected widget that looks live.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def notebooks(names=None) -> list[Path]:
    found = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    if names:
        found = [p for p in found if any(n in p.name for n in names)]
    return found


def normalize(nb, path: Path) -> None:
    """Kernelspec, cell ids and no stored widget state: what every committed notebook has."""
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.pop("widgets", None)
    nb.nbformat_minor = max(int(nb.get("nbformat_minor", 4)), 5)
    seen = set()
    for i, c in enumerate(nb.cells):
        if not c.get("id") or c["id"] in seen:
            c["id"] = hashlib.sha1(f"{path.name}:{i}:{c.source}".encode()).hexdigest()[:8]
        seen.add(c["id"])
        c.metadata.pop("execution", None)          # per-run timestamps: noise in every diff


def execute(path: Path, timeout: int = 900):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def refresh(names=None) -> int:
    """Re-execute notebooks in place in replay mode and normalize them (what is committed)."""
    import nbformat

    os.environ["LAUNCHLAB_MODE"] = "replay"
    for p in notebooks(names):
        t0 = time.perf_counter()
        nb = execute(p)
        normalize(nb, p)
        nbformat.write(nb, p)
        print(f"{p.name:<40} {time.perf_counter() - t0:6.1f} s (replay, refreshed in place)")
    return 0


def build(out: str = "build/course") -> int:
    import nbformat  # noqa: F401 - the HTML exporter needs it installed
    from nbconvert import HTMLExporter

    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    ok = True
    for nb_path in notebooks():
        t0 = time.perf_counter()
        try:
            nb = execute(nb_path)
        except Exception as e:  # report and continue with the others
            ok = False
            print(f"FAILED {nb_path.name}: {type(e).__name__}: {str(e)[:400]}", file=sys.stderr)
            continue
        html, _ = HTMLExporter().from_notebook_node(nb)
        (outdir / (nb_path.stem + ".html")).write_text(html)
        print(f"{nb_path.name:<40} {time.perf_counter() - t0:6.1f} s -> {outdir / (nb_path.stem + '.html')}")
    return 0 if ok else 1
