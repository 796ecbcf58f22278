"""A sandbox for running a learner's code while grading: bubblewrap (Debian's `bubblewrap`, the `bwrap` that
Flatpak uses), the course tree read-only, everything else an instructor keeps beside it hidden.

Inside, the submission sees:
    /                   the machine's files, read-only (Python, the course's packages, launchlab, the recordings)
    /tmp                its own empty tmpfs; its copy of the submission in /tmp/work (writable, its only output)
    hidden              the instructor's material and everything of other learners, each covered by an empty
                        tmpfs: lab_solutions/ (the master, the hidden tests), .git (their history), build/ (grading
                        runs, reports), data/grading/, the folder of submissions and the grader's output folder
    no network          new network, PID, IPC, UTS and user namespaces (--unshare-all): the loopback only
    no environment      --clearenv, then PATH, HOME=/tmp/home, LAUNCHLAB_MODE=replay, PYTHONPATH=<course>
    no survivors        --die-with-parent and its own PID namespace: when the sandbox's first process ends or
                        the grader kills it, every process the submission started goes with it

Where bubblewrap is missing or refused (a machine without user namespaces), `available()` says why, and the
grader refuses to grade untrusted work unless told to go ahead without it (`grade --no-sandbox`).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from launchlab.core import paths

HIDDEN = ("lab_solutions", ".git", "build", "data/grading")


@cache
def available() -> str | None:
    """None when bubblewrap works here, else why not."""
    exe = shutil.which("bwrap")
    if not exe:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    p = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else f"bwrap is refused here: {p.stderr.strip()[:200]}"


def command(work: Path, argv: list[str], hide: tuple[Path, ...] = (), root: Path = paths.ROOT) -> list[str]:
    """The bwrap command that runs `argv` with `work` (a host folder) as its only writable place, /tmp/work."""
    cmd = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
           "--tmpfs", "/tmp"]
    # what the run needs, shown again where it lives under /tmp (a checkout or a virtual environment there)
    for need in {Path(root).resolve(), Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}:
        if Path("/tmp") in need.parents:
            cmd += ["--ro-bind", str(need), str(need)]
    cmd += ["--dir", "/tmp/home", "--bind", str(Path(work).resolve()), "/tmp/work"]
    for p in [*(Path(root) / h for h in HIDDEN), *hide]:
        if Path(p).exists():
            cmd += ["--tmpfs", str(Path(p).resolve())]
    cmd += ["--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
            "--setenv", "PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "--setenv", "HOME", "/tmp/home", "--setenv", "LAUNCHLAB_MODE", "replay",
            "--setenv", "PYTHONPATH", str(Path(root).resolve()), "--setenv", "MPLBACKEND", "Agg",
            "--chdir", "/tmp/work", "--"]
    return cmd + list(argv)
