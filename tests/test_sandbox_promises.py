"""The sandbox's promises, each observed from the host rather than taken from the sandbox's own report (issue 43):

- everything it shows is read-only: a submission that tries to write into every folder the grader's run needs --
  the virtual environment, the interpreter's own installation and its standard library, the site-packages, the
  course's package, kernels and recordings, /usr, /etc, a PYTHONPATH folder beside the course -- leaves no file
  there that the host can see;
- nothing outlives it: a submission that starts processes (one in a session of its own, as a daemon would) and
  then runs past the total time limit is stopped at that limit, keeps the step it finished before, and leaves no
  process on the host -- with the cgroup that kills a grader's run as a whole, and without one (a grader that is
  not root, a container without delegation), where the sandbox alone must hold.

The paths are worked out here from the interpreter (sys.prefix, sys.base_prefix, sysconfig), not from the list
that launchlab.faces.sandbox binds.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from launchlab.core import paths
from launchlab.faces import confine, runner, sandbox

sandboxed = pytest.mark.needs("sandbox")
MARK = ".launchlab-semantic-probe"

WRITER = r'''
import json, os, sys
wrote = []
for p in sys.argv[1:]:
    try:
        with open(os.path.join(p, %(mark)r), "w") as f:
            f.write("written from inside the sandbox")
        wrote.append(p)
    except OSError:
        pass
print(json.dumps(wrote))
'''


def _shown_folders(extra: Path) -> list[str]:
    """Every host folder a submission's run needs to see, by where this interpreter and the course are."""
    got = [sys.prefix, sys.base_prefix, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"],
           str(Path(sys.executable).resolve().parent), str(paths.ROOT / "launchlab"), str(paths.ROOT / "kernels"),
           str(paths.ROOT / "data" / "recordings"), "/usr/lib", "/usr/bin", "/etc", str(extra)]
    out = []
    for p in got:
        for q in (p, str(Path(p).resolve())):
            if Path(q).is_dir() and q not in out:
                out.append(q)
    return out


def _left_marks(folders: list[str]) -> list[str]:
    left = [p for p in folders if (Path(p) / MARK).exists()]
    for p in left:                                    # a broken sandbox's writes are not left on this machine
        (Path(p) / MARK).unlink()
    return left


@sandboxed
def test_nothing_a_submission_can_see_outside_its_tmpfs_can_be_written_as_the_host_sees_it(tmp_path, monkeypatch):
    extra = tmp_path / "beside-the-course"            # a GPU image's pip --target folder, on PYTHONPATH
    extra.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(extra))
    folders = _shown_folders(extra)
    assert len(folders) >= 10 and str(Path(sys.base_prefix).resolve()) in folders
    assert not _left_marks(folders), "marks were left before the test ran"
    conf = confine.Confinement(sandbox.LIMITS)
    try:
        cmd = conf.wrap(sandbox.command([sys.executable, "-c", WRITER % {"mark": MARK}, *folders]))
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    finally:
        conf.close()
    assert p.returncode == 0, p.stderr[-600:]
    said = json.loads(p.stdout.strip().splitlines()[-1])
    left = _left_marks(folders)
    assert left == [], f"a submission wrote into {left} on the host"
    # inside, a folder whose parent is the sandbox's own /tmp (a checkout under /tmp) may take a write that the
    # host never sees; none of the interpreter's or the system's folders may
    assert not [p for p in said if not p.startswith("/tmp/")], said
    # the complement: the writer does write where it may (its own /tmp), so a refusal above is the sandbox's
    conf = confine.Confinement(sandbox.LIMITS)
    try:
        p = subprocess.run(conf.wrap(sandbox.command([sys.executable, "-c", WRITER % {"mark": MARK}, "/tmp"])),
                           capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    finally:
        conf.close()
    assert json.loads(p.stdout.strip().splitlines()[-1]) == ["/tmp"]
    assert not (Path("/tmp") / MARK).exists(), "the sandbox's /tmp is the host's /tmp"


def _notebook(token: str) -> bytes:
    md = lambda s: {"cell_type": "markdown", "metadata": {}, "source": s}             # noqa: E731
    code = lambda s: {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s}  # noqa: E731
    cells = [md("## Step 1"), code("x = 6 * 7"),
             md("## Step 2"), code("import subprocess, time\n"
                                   f"subprocess.Popen(['sleep', '{token}'], start_new_session=True)\n"
                                   f"subprocess.Popen(['sleep', '{token}'])\n"
                                   "y = 1\n"
                                   "time.sleep(300)")]
    return json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5,
                       "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                   "language": "python"}}}).encode()


def _processes_with(token: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                argv = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if token.encode() in argv:
                found.append(int(d.name))
    return found


@sandboxed
@pytest.mark.parametrize("use_cgroups", [True, False], ids=["with-cgroups", "sandbox-alone"])
def test_a_run_past_its_total_time_stops_there_keeps_its_finished_step_and_leaves_no_process(use_cgroups):
    total, cell = 15.0, 120.0           # the cell limit (120 s) would stop the sleep much later than the total
    token = f"{300 + os.getpid() % 1000}.{int(use_cgroups)}7"
    t0 = time.monotonic()
    try:
        got = runner.collect(_notebook(token), ["x", "y"], True, cell, total, use_cgroups=use_cgroups)
        took = time.monotonic() - t0
        time.sleep(0.5)
        left = _processes_with(token)
    finally:
        for pid in _processes_with(token):
            os.kill(pid, 9)
    assert total <= took < total + 10, took             # stopped at the total limit, not at the cell's
    assert got.status == "timeout after 15 s in all; the steps it finished before are graded", got.status
    assert got.answers.get("x") == {"value": 42}, got.answers          # step 1 finished before the limit
    assert "value" not in got.answers.get("y", {}), got.answers        # step 2 did not: nothing of it is read
    assert left == [], f"processes {left} of the submission outlived the sandbox"
