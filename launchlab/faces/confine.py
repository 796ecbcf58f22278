"""Resource limits for one sandboxed submission: cgroups where the machine offers them, rlimits always.

The grader makes a `Confinement` per submission. It creates cgroups for it where this machine lets it (cgroup v2
with the memory, pids and cpu controllers, or the v1 hierarchies of the same names): memory (memory.max /
memory.limit_in_bytes), processes and threads (pids.max) and an equal CPU share (cpu.weight / cpu.shares), so a
submission that starts forty busy processes gets no more of the machine than its neighbour with one. The command
it runs is this file run as a script (stdlib only, `python -I`), which moves itself into those cgroups, sets the
rlimits (address space, file size, CPU time, open files, no core files) and then execs bwrap, so every process of
the submission starts inside both. `described()` is the list `summary --json` reports: what is limited, and by
what. After the run, `close()` kills anything left in the cgroups and removes them.

    python -I confine.py --cgroup DIR ... --rlimit NAME=VALUE ... [--hide-args] -- CMD ...

With --hide-args (the sandbox's bwrap: `wrap` adds it when CMD is bwrap), bwrap's options reach it in a memory
file (`bwrap --args FD`, which bwrap reads and closes) and it runs as plain `bwrap`: inside the sandbox,
/proc/1/cmdline -- bwrap's own process, the PID namespace's first -- reads `bwrap --args 3 -- python ...` (the
command, whose interpreter the sandbox shows anyway), not the host's paths that every --ro-bind names.
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
ACCEPT_WEAKER = "LAUNCHLAB_ACCEPT_WEAKER_LIMITS"    # 1: grade untrusted work where cgroups cannot be made


def user_tasks(uid: int | None = None) -> int:
    """Processes and threads of `uid` (this process's real uid) on this machine, as RLIMIT_NPROC counts them."""
    uid = os.getuid() if uid is None else uid
    n = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                n += int(fields["Threads"])
        except (OSError, KeyError, ValueError, IndexError):
            continue
    return n


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

    def __init__(self, limits, use_cgroups: bool = True, uid: int | None = None):
        self.limits = limits
        self.uid = uid                  # whose processes RLIMIT_NPROC counts (default: this process's real uid)
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
        if not self.dirs:              # no pids cgroup: RLIMIT_NPROC, over the grader's user (root is exempt)
            out["NPROC"] = user_tasks(self.uid) + int(self.limits.processes)
        return out

    def wrap(self, cmd: list[str], python: str | None = None) -> list[str]:
        """`cmd` run inside the cgroups and under the rlimits (bwrap with its options hidden: --hide-args), by
        this file run with `python` (default: this interpreter; it needs the standard library only)."""
        out = [python or sys.executable, "-I", str(Path(__file__).resolve())]
        for d in self.dirs:
            out += ["--cgroup", str(d)]
        for k, v in self.rlimits().items():
            out += ["--rlimit", f"{k}={v}"]
        if cmd and Path(cmd[0]).name == "bwrap" and len(cmd) > 1 and cmd[1] != "--args":
            out.append("--hide-args")
        return out + ["--", *cmd]

    def described(self) -> list[str]:
        """What is limited and by what, for the report (what does not hold here is not listed: `holds`)."""
        return [text for text, held in self.holds() if held]

    def holds(self) -> list[tuple[str, bool]]:
        """Every limit a submission is documented to run under, and whether it holds here: memory, processes and
        the CPU share need cgroups; without them, processes are bounded only for a grader that is not root
        (RLIMIT_NPROC, counted over the grader's user; the kernel exempts root), and memory only per process."""
        lim, mib = self.limits, 1 << 20
        by = self.kind
        cg = bool(self.dirs)
        root = (os.geteuid() if self.uid is None else self.uid) == 0
        d = [(f"memory {lim.memory_bytes // mib} MiB per submission ({by if cg else 'no writable cgroup here'})",
              cg)]
        if cg:
            d.append((f"processes and threads {lim.processes} per submission ({by} pids)", True))
        elif root:
            d.append((f"processes and threads {lim.processes} per submission (no writable cgroup, and RLIMIT_NPROC "
                      f"does not bind a grader running as root)", False))
        else:
            d.append((f"processes and threads: at most {lim.processes} more than the grader's user ran when the "
                      f"submission started (RLIMIT_NPROC, shared by the user's processes and the submissions "
                      f"graded at once)", True))
        d += [(f"CPU: an equal share per submission, whatever its process count ({by if cg else 'no cgroup'} cpu)",
               cg),
              (f"address space {lim.address_space_bytes // mib} MiB per process (RLIMIT_AS)", True),
              (f"file size {lim.file_size_bytes // mib} MiB per file (RLIMIT_FSIZE)", True),
              (f"CPU time {lim.cpu_seconds} s per process (RLIMIT_CPU)", True),
              (f"open files {lim.open_files} per process (RLIMIT_NOFILE)", True), ("core files 0 (RLIMIT_CORE)", True),
              (f"writable space {lim.tmp_bytes // mib} MiB (tmpfs at /tmp, its only writable place)", True),
              (f"shared memory {lim.shm_bytes // mib} MiB (tmpfs at /dev/shm)", True)]
        return d

    def bounded(self) -> bool:
        """Whether a submission's memory and processes are bounded as documented (cgroups were made)."""
        return bool(self.dirs)

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
    hide = "--hide-args" in opts
    opts = [o for o in opts if o != "--hide-args"]
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
    if hide and "--" in cmd:                  # bwrap's options in a memory file it reads and closes, not in argv
        end = cmd.index("--")
        fd = os.memfd_create("bwrap-args", 0)
        os.write(fd, b"".join(a.encode("utf-8", "surrogateescape") + b"\0" for a in cmd[1:end]))
        os.lseek(fd, 0, os.SEEK_SET)
        os.execv(cmd[0], ["bwrap", "--args", str(fd), *cmd[end:]])
    os.execv(cmd[0], cmd)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
