"""Install the course into the current interpreter (the Makefile runs it inside .venv).

    python tools/install.py            # -e .[dev,grade], plus CuPy when a GPU is present, and the JupyterLab
                                       # settings the decks need (deploy/lab/overrides.json: PageDown / PageUp)
    python tools/install.py --lab-settings     # only those settings, into this interpreter's environment

CuPy is chosen from the driver, not guessed: `nvidia-smi` prints the highest CUDA version the installed
driver supports, and its major picks the wheel (cupy-cuda13x or cupy-cuda12x, with the `ctk` extra so
NVRTC and the CUDA runtime libraries come from PyPI too). With no GPU (a laptop, CI) CuPy is not installed
and the course runs in replay mode. LAUNCHLAB_CUPY overrides the choice: `none`, `cupy-cuda12x`,
`cupy-cuda13x`.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

CUPY_FOR_MAJOR = {12: "cupy-cuda12x", 13: "cupy-cuda13x"}


def driver_cuda_major() -> int | None:
    """The CUDA major the driver supports, from nvidia-smi's header; None without a working GPU."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", out)
    return int(m.group(1)) if m else None


def cupy_package() -> str | None:
    override = os.environ.get("LAUNCHLAB_CUPY", "").strip()
    if override:
        return None if override.lower() == "none" else override
    major = driver_cuda_major()
    if major is None:
        return None
    if major not in CUPY_FOR_MAJOR:
        print(f"install: driver supports CUDA {major}; this course knows CuPy wheels for "
              f"{sorted(CUPY_FOR_MAJOR)}; taking the newest", file=sys.stderr)
        major = max(CUPY_FOR_MAJOR)
    return CUPY_FOR_MAJOR[major]


def pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q", *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def lab_overrides(root: str, prefix: str = sys.prefix) -> str:
    """The course's JupyterLab settings (deploy/lab/overrides.json: a presenter's remote sends PageDown / PageUp,
    which jupyterlab-slideshow does not bind; issue 42) merged into the environment's overrides.json, where
    JupyterLab reads settings defaults for every user of this environment. Returns the file written."""
    src = os.path.join(root, "deploy", "lab", "overrides.json")
    dst = os.path.join(prefix, "share", "jupyter", "lab", "settings", "overrides.json")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    have = {}
    if os.path.exists(dst):
        with open(dst) as f:
            have = json.load(f)
    with open(src) as f:
        have.update(json.load(f))
    with open(dst, "w") as f:
        json.dump(have, f, indent=1)
    return dst


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if argv == ["--lab-settings"]:           # only the JupyterLab settings (an environment built another way: the image)
        print(f"install: JupyterLab settings for presenting: {lab_overrides(root)}")
        return 0
    pip("-e", f"{root}[dev,grade]")          # grade: otter-grader, for the lab's grader.check cells and make grade
    print(f"install: JupyterLab settings for presenting: {lab_overrides(root)}")
    pkg = cupy_package()
    if pkg:
        pip(f"{pkg}[ctk]>=13.0")
        print(f"install: GPU found, installed {pkg}: notebooks run live")
    else:
        print("install: no GPU found (or LAUNCHLAB_CUPY=none): notebooks run in replay mode")
    return 0


if __name__ == "__main__":
    sys.exit(main())
