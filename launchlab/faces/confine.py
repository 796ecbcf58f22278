"""Resource limits for one sandboxed submission: cgroups where the machine offers them, rlimits always.

The grader makes a `Confinement` per submission. It creates cgroups for it where this machine lets it (cgroup v2
with the memory, pids and cpu controllers, or the v1 hierarchies of the same names): memory (memory.max /
memory.limit_in_bytes), processes and threads (pids.max) and an equal CPU share (cpu.weight / cpu.shares), so a
submission that starts forty busy processes gets no more of the machine than its neighbour with one. The command
it runs is this file run as a script (stdlib only, `python -I`), which moves itself into those cgroups, sets the
rlimits (address space, file size, CPU time, open files, no core files) and then execs bwrap, so every process of
the submission starts inside both. `described()` is the list `summary --json` reports: what is limited, and by
what. After the run, `close()` kills anything left in the cgroups and removes them.

    python -I confine.py --cgroup DIR ... --rlimit NAME=VALUE ... -- CMD ...
"""
from __future__ import annotations

import os
import resource
import signal
import sys
import time
import uuid
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
RLIMITS = {"AS": "address_space_bytes", "FSIZE": "file_size_bytes", "CPU": "cpu_seconds",
           "NOFILE": "open_files", "CORE": None}


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
        return True
    except OSError:
        return False


def _v2_root() -> Path | None:
    """A cgroup v2 directory where children with memory, pids and cpu can be made (None if there is none)."""
    for base in (CGROUP, CGROUP / "unified"):
        ctl = base / "cgroup.controllers"
        try:
            have = set(ctl.read_text().split())
        except OSError:
            continue
        if {"memory", "pids", "cpu"} <= have and os.access(base, os.W_OK):
            return base
    return None


def _v1_roots() -> dict | None:
    roots = {c: CGROUP / c for c in ("memory", "pids", "cpu")}
    if all((r / "cgroup.procs").exists() and os.access(r, os.W_OK) for r in roots.values()):
        return roots
    return None


class Confinement:
    """The cgroups (if any) and rlimits of one submission's run."""

    def __init__(self, limits, use_cgroups: bool = True):
        self.limits = limits
        self.dirs: list[Path] = []
        self.kind = "none"
        name = f"launchlab-grade-{uuid.uuid4().hex[:12]}"
        if use_cgroups:
            self._make(name)

    def _make(self, name: str) -> None:
        lim = self.limits
        v2 = _v2_root()
        if v2 is not None:
            _write(v2 / "cgroup.subtree_control", "+memory +pids +cpu")
            d = v2 / name
            try:
                d.mkdir()
            except OSError:
                d = None
            if d is not None:
                ok = (_write(d / "memory.max", str(lim.memory_bytes)) and _write(d / "pids.max", str(lim.processes))
                      and _write(d / "cpu.weight", "100"))
                _write(d / "memory.swap.max", "0")
                if ok:
                    self.dirs, self.kind = [d], "cgroup v2"
                    return
                self._remove([d])
        v1 = _v1_roots()
        if v1 is not None:
            made = []
            try:
                for ctl, root in v1.items():
                    d = root / name
                    d.mkdir()
                    made.append(d)
                ok = (_write(v1["memory"] / name / "memory.limit_in_bytes", str(lim.memory_bytes))
                      and _write(v1["pids"] / name / "pids.max", str(lim.processes))
                      and _write(v1["cpu"] / name / "cpu.shares", "1024"))
                _write(v1["memory"] / name / "memory.memsw.limit_in_bytes", str(lim.memory_bytes))
            except OSError:
                ok = False
            if ok:
                self.dirs, self.kind = made, "cgroup v1"
                return
            self._remove(made)

    def rlimits(self) -> dict:
        out = {}
        for name, field in RLIMITS.items():
            out[name] = 0 if field is None else int(getattr(self.limits, field))
        return out

    def wrap(self, cmd: list[str]) -> list[str]:
        """`cmd` run inside the cgroups and under the rlimits."""
        out = [sys.executable, "-I", str(Path(__file__).resolve())]
        for d in self.dirs:
            out += ["--cgroup", str(d)]
        for k, v in self.rlimits().items():
            out += ["--rlimit", f"{k}={v}"]
        return out + ["--", *cmd]

    def described(self) -> list[str]:
        """What is limited and by what, for the report."""
        lim, mib = self.limits, 1 << 20
        by = self.kind
        d = []
        if self.dirs:
            d += [f"memory {lim.memory_bytes // mib} MiB per submission ({by})",
                  f"processes and threads {lim.processes} per submission ({by} pids)",
                  f"CPU: an equal share per submission, whatever its process count ({by} cpu)"]
        d += [f"address space {lim.address_space_bytes // mib} MiB per process (RLIMIT_AS)",
              f"file size {lim.file_size_bytes // mib} MiB per file (RLIMIT_FSIZE)",
              f"CPU time {lim.cpu_seconds} s per process (RLIMIT_CPU)",
              f"open files {lim.open_files} per process (RLIMIT_NOFILE)", "core files 0 (RLIMIT_CORE)",
              f"writable space {lim.tmp_bytes // mib} MiB (tmpfs at /tmp, its only writable place)",
              f"shared memory {lim.shm_bytes // mib} MiB (tmpfs at /dev/shm)"]
        return d

    def peak_memory(self) -> int | None:
        for d in self.dirs:
            for f in ("memory.peak", "memory.max_usage_in_bytes"):
                try:
                    return int((d / f).read_text())
                except (OSError, ValueError):
                    continue
        return None

    def _remove(self, dirs) -> None:
        for d in dirs:
            for _ in range(50):
                try:
                    pids = [int(x) for x in (d / "cgroup.procs").read_text().split()]
                except (OSError, ValueError):
                    pids = []
                if not pids:
                    break
                _write(d / "cgroup.kill", "1")
                for p in pids:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
                time.sleep(0.05)
            try:
                d.rmdir()
            except OSError:
                pass

    def close(self) -> None:
        self._remove(self.dirs)
        self.dirs = []


def main(argv: list[str]) -> int:
    i = argv.index("--")
    opts, cmd = argv[:i], argv[i + 1:]
    me = str(os.getpid())
    k = 0
    while k < len(opts):
        if opts[k] == "--cgroup":
            Path(opts[k + 1], "cgroup.procs").write_text(me)      # fails loudly: the limits are not optional
        elif opts[k] == "--rlimit":
            name, value = opts[k + 1].split("=")
            which = getattr(resource, f"RLIMIT_{name}")
            v = int(value)
            _, hard = resource.getrlimit(which)      # a limit already lower (set by whoever runs the grader,
            if hard != resource.RLIM_INFINITY:       # unprivileged) stays: only root may raise a hard limit
                v = min(v, hard)
            resource.setrlimit(which, (v, v))
        k += 2
    os.execv(cmd[0], cmd)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
