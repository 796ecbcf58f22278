"""A sandbox for running a learner's code while grading: bubblewrap (Debian's `bubblewrap`, the `bwrap` that
Flatpak uses) with an allowlist: the submission sees only what running the course needs, read-only, and
nothing of the instructor's.

Inside, the submission sees:
    /usr, /bin, /lib*   the system's programs and libraries, read-only
    /etc                only the few files a Python process reads (users, groups, the loader's cache, time zone)
    Python              the interpreter and the virtual environment that run the course, read-only
    the course          its package, its kernels and its recordings, read-only -- not lab_solutions/ (the master,
                        the hidden tests, the reference answers), not .git, not build/, not data/grading/, not
                        any other folder of this machine: another checkout, the submissions, a home directory
    /tmp                its own empty tmpfs; its copy of the submission in /tmp/work (writable, its only output)
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

SHOWN = ("launchlab", "kernels", "data/recordings")          # the course, as a submission's run needs it
ETC = ("passwd", "group", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "localtime", "hosts", "mime.types")


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
    """The bwrap command that runs `argv` with `work` (a host folder) as its only writable place, /tmp/work.
    (`hide` is kept for callers that name what must stay out of sight: with an allowlist it already is.)"""
    cmd = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/usr", "/usr", "--tmpfs", "/tmp"]   # /tmp first:
    # a checkout or a virtual environment that lives under /tmp is bound over it below
    for top in ("/bin", "/lib", "/lib64", "/lib32", "/sbin"):
        p = Path(top)
        if p.is_symlink():
            cmd += ["--symlink", str(p.readlink()), top]
        elif p.exists():
            cmd += ["--ro-bind", top, top]
    for name in ETC:
        if (Path("/etc") / name).exists():
            cmd += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for need in sorted({Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}):
        cmd += ["--ro-bind", str(need), str(need)]
    for rel in SHOWN:
        if (Path(root) / rel).exists():
            cmd += ["--ro-bind", str((Path(root) / rel).resolve()), str((Path(root) / rel).resolve())]
    cmd += ["--dev", "/dev", "--proc", "/proc", "--dir", "/tmp/home",
            "--bind", str(Path(work).resolve()), "/tmp/work",
            "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
            "--setenv", "PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "--setenv", "HOME", "/tmp/home", "--setenv", "LAUNCHLAB_MODE", "replay",
            "--setenv", "PYTHONPATH", str(Path(root).resolve()), "--setenv", "MPLBACKEND", "Agg",
            "--chdir", "/tmp/work", "--"]
    return cmd + list(argv)
