"""`make course`: execute every notebook headless and write HTML beside each other in one folder."""
from __future__ import annotations

import sys
import time
from pathlib import Path

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"


def build(out: str = "build/course") -> int:
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    ok = True
    for nb_path in sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb")):
        t0 = time.perf_counter()
        nb = nbformat.read(nb_path, as_version=4)
        try:
            NotebookClient(nb, timeout=900, kernel_name="python3",
                           resources={"metadata": {"path": str(NOTEBOOK_DIR)}}).execute()
        except Exception as e:  # report and continue with the others
            ok = False
            print(f"FAILED {nb_path.name}: {type(e).__name__}: {str(e)[:400]}", file=sys.stderr)
        html, _ = HTMLExporter().from_notebook_node(nb)
        (outdir / (nb_path.stem + ".html")).write_text(html)
        print(f"{nb_path.name:<40} {time.perf_counter() - t0:6.1f} s -> {outdir / (nb_path.stem + '.html')}")
    return 0 if ok else 1
