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
from launchlab.faces import confine, sandbox
from launchlab.faces.intake import JSON_DEPTH, MiB, json_depth

ROOT = paths.ROOT
ANSWERS_BYTES = 8 * MiB         # what is read of the answers channel (an honest run writes about 0.2 MiB)
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
    """The JSON objects of the answers channel, in order: a line that is not one (too deep, not JSON, not an
    object) is skipped, never trusted; the submission's own code can write here too, so nothing read is more
    than an answer it could have given."""
    out = []
    for line in buf.split(b"\n"):
        if not line.strip() or json_depth(line) > JSON_DEPTH:
            continue
        try:
            got = json.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        if isinstance(got, dict) and isinstance(got.get("answers"), dict):
            out.append(got)
    return out


def _pump(proc, answers_fd: int, log_fd: int, deadline: float) -> tuple[bytes, int, bytes, int, bool]:
    """Read the answers channel and the output until both close or the deadline passes, keeping at most
    ANSWERS_BYTES and LOG_BYTES (the rest is read and counted, so a flood neither blocks nor fills the grader).
    (answers, answers bytes read, log, log bytes read, timed out)."""
    import selectors
    sel = selectors.DefaultSelector()
    keep = {answers_fd: [bytearray(), 0, ANSWERS_BYTES], log_fd: [bytearray(), 0, LOG_BYTES]}
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
            if now - exited_at > 5:          # exited, yet something it left holds a pipe open: stop reading
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
    return bytes(keep[answers_fd][0]), keep[answers_fd][1], bytes(keep[log_fd][0]), keep[log_fd][1], timed_out


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
    if timed_out:
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


