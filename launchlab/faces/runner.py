"""Step 1 of grading, from the grader's side: one submission run in the sandbox (launchlab.faces.sandbox) under
limits (launchlab.faces.confine), and its answers read back -- without trusting anything it can touch.

The notebook's bytes (already checked by launchlab.faces.intake) reach the sandbox as a memory file that bwrap
copies to /tmp/work (`--file FD`): nothing of the host is named. The collector inside (launchlab.faces.collect)
writes its answers, one JSON line after each step, to a pipe it was handed; its output and the kernel's go to
another pipe. Both are drained here as they come (`_pump`), keeping at most ANSWERS_BYTES and LOG_BYTES and
counting the rest, so a flood of output neither blocks the submission nor grows the grader. The learner's code
runs as the collector's user and could write to that pipe too: every line is parsed with its depth bounded and
only JSON objects with an "answers" object are kept -- nothing read is more than an answer the learner could have
given by assigning it. A run stopped at its time limit keeps every step it finished.

`preflight` runs a one-cell notebook the same way before a class is graded: when the sandbox cannot start a
kernel (a broken environment, a refused namespace), grading stops with the reason instead of grading everyone 0.
`probe` measures what a submission is inside: uid, capabilities, what it can write, whether a remount or a new
user namespace is refused (summary --json: 09.sandbox_capabilities, 09.sandbox_uid_nonzero).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from launchlab.core import paths
from launchlab.faces import confine, sandbox, scan
from launchlab.faces.intake import MiB

ROOT = paths.ROOT
ANSWERS_BYTES = 8 * MiB         # what is kept of the answers channel (an honest run writes about 0.2 MiB)
LOG_BYTES = 256 * 1024          # what is kept of a submission's output (the rest is counted, not kept)


class SandboxBroken(RuntimeError):
    pass


@dataclass
class Collected:
    answers: dict = field(default_factory=dict)      # name -> {"value": ...} or {"__missing__": why}
    events: list = field(default_factory=list)       # the learner's errors and timeouts, by step
    status: str = "ok"
    log: bytes = b""                                 # what it printed, the first LOG_BYTES of it
    log_bytes: int = 0                               # how much it printed in all
    answers_bytes: int = 0
    peak_memory: int | None = None


def _lines(buf: bytes) -> list:
    """The JSON objects of the answers channel, in order: the collector's lines, the last scan.MAX_LINES of them
    (launchlab.faces.scan.answer_lines: found by a linear search, each parsed only when its depth is bounded); a
    line that is not one (too deep, not JSON, not an object) is skipped, never trusted. The submission's own code
    can write here too, so nothing read is more than an answer it could have given."""
    return scan.answer_lines(buf)


def drain(proc, caps: dict, deadline: float, grace: float = 5.0) -> tuple[dict, bool]:
    """Read every descriptor of `caps` ({fd: bytes to keep}) until all close or the deadline passes, keeping at
    most its cap of each and counting the rest, so a flood neither blocks the process that writes nor grows the
    grader. ({fd: (kept bytes, bytes read)}, timed out). Once `proc` has exited, `grace` seconds more at most:
    something it left behind may hold a pipe open."""
    import selectors
    sel = selectors.DefaultSelector()
    keep = {fd: [bytearray(), 0, int(cap)] for fd, cap in caps.items()}
    for fd in keep:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    timed_out = False
    exited_at = None
    while sel.get_map():
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            break
        if proc.poll() is not None:
            exited_at = exited_at or now
            if now - exited_at > grace:
                break
        for key, _ in sel.select(timeout=min(0.5, max(0.01, deadline - now))):
            try:
                b = os.read(key.fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                b = b""
            if not b:
                sel.unregister(key.fd)
                continue
            k = keep[key.fd]
            k[1] += len(b)
            room = k[2] - len(k[0])
            if room > 0:
                k[0] += b[:room]
    sel.close()
    return {fd: (bytes(k[0]), k[1]) for fd, k in keep.items()}, timed_out


def _pump(proc, answers_fd: int, log_fd: int, deadline: float) -> tuple[bytes, int, bytes, int, bool]:
    """The answers channel and the output, drained (`drain`) with ANSWERS_BYTES and LOG_BYTES kept.
    (answers, answers bytes read, log, log bytes read, timed out)."""
    got, timed_out = drain(proc, {answers_fd: ANSWERS_BYTES, log_fd: LOG_BYTES}, deadline)
    return (*got[answers_fd], *got[log_fd], timed_out)


def collect(data: bytes, names: list[str], sandboxed: bool, cell_timeout: float, total_timeout: float,
            limits: sandbox.Limits = sandbox.LIMITS, use_cgroups: bool = True) -> Collected:
    """Run one submission (its bytes) for its answers. In the sandbox the notebook reaches /tmp/work by a
    memory file bwrap copies (`--file`), the answers come back over a pipe the collector was handed, and its
    output over another; nothing the submission can name on the host is opened. Without the sandbox (trusted
    work) the same, in a folder of its own. A run stopped at `total_timeout` keeps every step it finished."""
    import signal
    c = Collected()
    ans_r, ans_w = os.pipe()
    log_r, log_w = os.pipe()
    argv = [sys.executable, "-m", "launchlab.faces.collect", "submission.ipynb", "-", *names,
            "--cell-timeout", str(cell_timeout), "--answers-fd", str(ans_w)]
    conf = confine.Confinement(limits, use_cgroups=use_cgroups)
    tmp = None
    mem = None
    try:
        if sandboxed:
            mem = os.memfd_create("submission.ipynb", 0)       # no CLOEXEC: bwrap reads it by number
            os.write(mem, data)
            os.lseek(mem, 0, os.SEEK_SET)
            cmd, cwd, env = conf.wrap(sandbox.command(argv, submission_fd=mem)), None, {"PATH": "/usr/bin:/bin"}
            fds = (mem, ans_w)
        else:                               # told to go ahead without a sandbox: still its own process and env
            tmp = tempfile.TemporaryDirectory(prefix="launchlab-grade-")
            (Path(tmp.name) / "submission.ipynb").write_bytes(data)
            cmd, cwd, fds = conf.wrap(argv), tmp.name, (ans_w,)
            env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp.name, "LAUNCHLAB_MODE": "replay",
                   "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log_w, stderr=log_w,
                                pass_fds=fds, start_new_session=True)
        os.close(ans_w)
        os.close(log_w)
        ans_w = log_w = None
        if mem is not None:
            os.close(mem)
            mem = None
        buf, c.answers_bytes, c.log, c.log_bytes, timed_out = _pump(proc, ans_r, log_r,
                                                                   time.monotonic() + total_timeout)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        c.peak_memory = conf.peak_memory()
    finally:
        conf.close()
        for fd in (ans_r, ans_w, log_r, log_w, mem):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if tmp is not None:
            tmp.cleanup()
    got = _lines(buf)
    for line in got:                         # each line is every answer so far: a later one wins, except
        for n, v in line["answers"].items():  # where it lost a value an earlier one had
            if n in names and ((isinstance(v, dict) and "value" in v)
                               or not (isinstance(c.answers.get(n), dict) and "value" in c.answers[n])):
                c.answers[n] = v
    if got and isinstance(got[-1].get("events"), list):
        c.events = [e for e in got[-1]["events"] if isinstance(e, dict)][:50]
    finished = bool(got) and got[-1].get("final") is True
    why = got[-1].get("not_a_notebook") if got else None
    if isinstance(why, str):                 # the collector could not read it as a notebook (in the sandbox)
        c.status = f"not a notebook ({why[:200]})"
    elif timed_out:
        kept = "; the steps it finished before are graded" if got else ""
        c.status = f"timeout after {total_timeout:.0f} s in all{kept}"
    elif c.answers_bytes > ANSWERS_BYTES:
        c.status = f"its answers were {c.answers_bytes / MiB:.0f} MiB, over the {ANSWERS_BYTES // MiB} MiB read"
    elif not got:
        tail = c.log.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        c.status = f"the notebook could not be run ({tail[0][:200]})"
    elif not finished:
        c.status = "the run ended before its last step (a kernel that died?); the steps it finished are graded"
    return c


CANARY = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": "import launchlab\nx = 6 * 7"}],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}


def preflight(sandboxed: bool, cell_timeout: float = 60, limits: sandbox.Limits = sandbox.LIMITS) -> None:
    """A notebook of one cell (x = 6 * 7) run exactly as a submission is: if it does not come back with x == 42,
    the sandbox cannot run a kernel here, and every grade would be a 0 that says nothing -- so grading stops."""
    c = collect(json.dumps(CANARY).encode(), ["x"], sandboxed, cell_timeout, max(120.0, 2 * cell_timeout), limits)
    if c.answers.get("x") != {"value": 42}:
        tail = c.log.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise SandboxBroken(f"the sandbox cannot run a notebook here ({c.status}; {' | '.join(tail)[:600]}): "
                           f"no submission was graded")


PROBE = r'''
import json, os, subprocess
caps = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    if k.startswith("Cap"):
        caps[k] = int(v.strip(), 16)
writable = []
for p in ("/", "/usr", "/etc", "/dev", "/proc/sys", %(root)r, %(prefix)r):
    try:
        open(os.path.join(p, ".launchlab-probe"), "w").close()
        writable.append(p)
        os.remove(os.path.join(p, ".launchlab-probe"))
    except OSError:
        pass
try:
    remount_refused = subprocess.run(["mount", "-o", "remount,rw,bind", %(root)r], capture_output=True).returncode != 0
except OSError:
    remount_refused = True
try:
    os.unshare(os.CLONE_NEWUSER)
    userns = True
except (OSError, AttributeError):
    userns = False
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(), "caps": caps,
                  "remount_refused": remount_refused, "new_user_namespace": userns,
                  "writable": writable + [p for p in ("/tmp", "/dev/shm") if os.access(p, os.W_OK)]}))
'''


def probe(limits: sandbox.Limits = sandbox.LIMITS) -> dict:
    """What a submission is, measured inside the sandbox: its uid and gid, its capability sets (every bit, all
    sets), whether a remount or a new user namespace is refused, where it can write; and the limits that held."""
    conf = confine.Confinement(limits)
    try:
        code = PROBE % {"root": str(ROOT.resolve()), "prefix": str(Path(sys.prefix).resolve())}
        p = subprocess.run(conf.wrap(sandbox.command([sys.executable, "-c", code])), capture_output=True,
                           text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
        got = json.loads(p.stdout.strip().splitlines()[-1])
        got["limits"] = conf.described()
        got["limits_by"] = conf.kind
    finally:
        conf.close()
    got["capabilities"] = sum(bin(v).count("1") for v in got["caps"].values())
    return got




WEAKER = r'''
import json, os, time
forked = []
for _ in range(400):                        # more than the 256 processes a submission may have
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    forked.append(pid)
for pid in forked:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
try:
    big = bytearray(%(one)d)                  # one process past its address space
    one_process = "allocated"
except MemoryError:
    one_process = "MemoryError"
r, w = os.pipe()
kids = []
for _ in range(3):                          # three processes, each well under RLIMIT_AS, all at once
    pid = os.fork()
    if pid == 0:
        try:
            b = bytearray(%(each)d)
            b[::4096] = b"\x01" * len(b[::4096])
            os.write(w, b"1")
            time.sleep(3)
        except MemoryError:
            os.write(w, b"0")
        os._exit(0)
    kids.append(pid)
got = b"".join(os.read(r, 1) for _ in kids)
for pid in kids:
    os.waitpid(pid, 0)
print(json.dumps({"processes_started": len(forked), "one_process_past_its_address_space": one_process,
                  "held_at_once_mib": got.count(b"1") * %(each)d // (1 << 20)}))
'''


def probe_weaker(as_user: int | None = None, limits: sandbox.Limits = sandbox.LIMITS) -> dict:  # pragma: no mutate block (not scoring)
    """The limits that hold where no cgroup can be made, measured: a sandboxed process under the rlimits alone
    (Confinement without cgroups) forks up to 400 processes, allocates past RLIMIT_AS in one process, and holds
    3 x 1.2 GiB in three at once. Run as this process's user, or (`as_user`, a uid; this process must be root) as
    that ordinary user through setpriv, as a grader that is not root runs: then the probe and confine.py run on the
    system's /usr/bin/python3 (the standard library only), which that user can reach wherever the course's own
    interpreter lives."""
    import shutil
    conf = confine.Confinement(limits, use_cgroups=False, uid=as_user)
    try:
        code = WEAKER % {"one": limits.address_space_bytes + (256 << 20), "each": 1200 << 20}
        if as_user is None:
            cmd = conf.wrap(sandbox.command([sys.executable, "-c", code]))
        else:
            py = "/usr/bin/python3"
            cmd = conf.wrap(sandbox.command([py, "-I", "-c", code], bind_python=False), python=py)
            cmd = [shutil.which("setpriv") or "setpriv", "--reuid", str(as_user), "--regid", str(as_user),
                   "--clear-groups", "--", *cmd]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
        lines = p.stdout.strip().splitlines()
        got = json.loads(lines[-1]) if lines else {"error": p.stderr.strip()[-300:]}
        got["user"] = "root" if (as_user is None and os.geteuid() == 0) or as_user == 0 else f"uid {as_user or os.getuid()}"
        got["holds"] = [text for text, ok in conf.holds() if ok]
        got["does_not_hold"] = [text for text, ok in conf.holds() if not ok]
    finally:
        conf.close()
    return got
