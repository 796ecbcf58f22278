"""What this machine has: the environment check notebook 00 prints."""
from __future__ import annotations

import importlib.metadata as md
import platform

from launchlab.core import compiler, mode, sass

PACKAGES = ("numpy", "matplotlib", "ipywidgets", "jupyterlab", "nbval", "cuda-bindings", "nvidia-cuda-nvrtc",
            "nvidia-cuda-cuobjdump", "nvidia-cuda-nvdisasm", "cupy-cuda13x", "cupy-cuda12x")


def report() -> str:
    rows = [f"{'python':<24} {platform.python_version()}"]
    for p in PACKAGES:
        try:
            v = md.version(p)
        except md.PackageNotFoundError:
            v = "-- not installed" + (" (only needed on a GPU machine)" if p.startswith("cupy") else "")
        rows.append(f"{p:<24} {v}")
    try:
        rows.append(f"{'NVRTC (offline compile)':<24} {'.'.join(map(str, compiler.nvrtc_version()))}")
    except Exception as e:  # noqa: BLE001 - report, do not fail the check
        rows.append(f"{'NVRTC (offline compile)':<24} unavailable: {e}")
    rows.append(f"{'cuobjdump / nvdisasm':<24} {'found' if sass.tool('cuobjdump') and sass.tool('nvdisasm') else 'missing (no SASS)'}")
    rows.append(f"{'mode':<24} {mode.describe()}")
    return "\n".join(rows)
