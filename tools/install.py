"""Install the course into the current interpreter (the Makefile runs it inside .venv).

    python tools/install.py            # -e .[dev,grade], plus CuPy when a GPU is present, and the JupyterLab
                                       # settings the decks need (deploy/lab/overrides.json: PageDown / PageUp,
                                       # Escape)
    python tools/install.py --lab-settings     # only those settings, into this interpreter's environment
    python tools/install.py --deck-reset       # a deck left shown in the user's settings set back (make lab)

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


DECK_SETTINGS = os.path.join("jupyterlab-slideshow", "plugin.jupyterlab-settings")


def user_settings_dir() -> str:
    """Where JupyterLab keeps this user's settings: $JUPYTERLAB_SETTINGS_DIR, else <config dir>/lab/user-settings
    (the config dir: $JUPYTER_CONFIG_DIR, else ~/.jupyter), as `jupyter lab path` says."""
    if os.environ.get("JUPYTERLAB_SETTINGS_DIR"):
        return os.environ["JUPYTERLAB_SETTINGS_DIR"]
    config = os.environ.get("JUPYTER_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".jupyter")
    return os.path.join(config, "lab", "user-settings")


def deck_reset(settings_dir: str | None = None) -> bool:
    """jupyterlab-slideshow saves `"active": true` in the user's settings while a deck is shown, so after a tab
    closed mid-deck the next JupyterLab opens in deck mode with no menu bar (issue 42). `make lab` sets it back to
    false before JupyterLab starts; the rest of the file (JSON5, comments and all) is left as it was. True when
    it changed the file."""
    path = os.path.join(settings_dir or user_settings_dir(), DECK_SETTINGS)
    if not os.path.exists(path):
        return False
    with open(path) as f:
        text = f.read()
    new = re.sub(r'("active"\s*:\s*)true\b', r"\1false", text)
    if new == text:
        return False
    with open(path, "w") as f:
        f.write(new)
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if argv == ["--deck-reset"]:             # before JupyterLab starts (make lab): a deck left shown is not resumed
        if deck_reset():
            print("install: a deck was left shown in the last JupyterLab session; it opens as a notebook now")
        return 0
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
