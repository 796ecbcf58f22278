"""Issue 56: the limits hold for any grader, or the grader says which do not and refuses untrusted work.

Where no cgroup can be made (an ordinary user, a container without delegation), a submission's memory cannot be
bounded as a whole, and its processes only by RLIMIT_NPROC, which binds a grader that is not root and no other.
`grade` says before the first submission which limits hold, and refuses unless told --accept-weaker-limits. What
holds then is measured by runner.probe_weaker, as root and as an ordinary user (setpriv). Inside the sandbox,
/proc/1/cmdline no longer lists the host's paths that bwrap binds."""
import os
import shutil
import subprocess
import sys
import threading

import pytest

from launchlab.faces import confine, grading, runner, sandbox

sandboxed = pytest.mark.needs("sandbox")


def _without_cgroups(monkeypatch):
    monkeypatch.setattr(confine.Confinement, "_make", lambda self, name: None)


def test_without_cgroups_memory_and_the_cpu_share_do_not_hold_and_processes_only_for_an_ordinary_user():
    root = dict(confine.Confinement(sandbox.LIMITS, use_cgroups=False, uid=0).holds())
    user = dict(confine.Confinement(sandbox.LIMITS, use_cgroups=False, uid=1000).holds())
    for held in (root, user):
        assert [ok for text, ok in held.items() if text.startswith("memory")] == [False]
        assert [ok for text, ok in held.items() if text.startswith("CPU: an equal share")] == [False]
        assert all(ok for text, ok in held.items() if "RLIMIT_AS" in text or "tmpfs" in text)
    assert [ok for text, ok in root.items() if text.startswith("processes")] == [False]
    assert [ok for text, ok in user.items() if text.startswith("processes")] == [True]
    assert any("RLIMIT_NPROC" in text for text in user)


def test_rlimit_nproc_is_set_only_without_cgroups_and_counts_the_user_s_tasks_now():
    conf = confine.Confinement(sandbox.LIMITS, use_cgroups=False)
    before = conf.rlimits()["NPROC"]
    assert before == confine.user_tasks() + sandbox.LIMITS.processes
    stop = threading.Event()
    extra = [threading.Thread(target=stop.wait) for _ in range(3)]
    for t in extra:
        t.start()
    try:
        assert conf.rlimits()["NPROC"] >= before + 3 - 1          # three more threads of this user (one may end)
    finally:
        stop.set()
        for t in extra:
            t.join()
    with_cg = confine.Confinement(sandbox.LIMITS)
    try:
        if with_cg.bounded():
            assert "NPROC" not in with_cg.rlimits()
    finally:
        with_cg.close()


@sandboxed
def test_without_cgroups_grading_untrusted_work_is_refused_unless_weaker_limits_are_accepted(tmp_path,
                                                                                              monkeypatch):
    _without_cgroups(monkeypatch)
    monkeypatch.delenv(confine.ACCEPT_WEAKER, raising=False)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada.ipynb").write_text("[1, 2]")
    said = []
    with pytest.raises(grading.GradingError, match="--accept-weaker-limits"):
        grading.grade_folder(subs, tmp_path / "out", jobs=1, say=said.append)
    assert "DOES NOT HOLD: memory" in said[0] and not (tmp_path / "out" / "grades.csv").exists()
    monkeypatch.setenv(confine.ACCEPT_WEAKER, "0")                     # anything but 1 refuses too
    with pytest.raises(grading.GradingError):
        grading.grade_folder(subs, tmp_path / "out", jobs=1, say=said.append)


@pytest.mark.slow
@sandboxed
def test_with_weaker_limits_accepted_grading_goes_on_and_says_so(tmp_path, monkeypatch):
    _without_cgroups(monkeypatch)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada.ipynb").write_text("[1, 2]")
    said = []
    _, rows, _ = grading.grade_folder(subs, tmp_path / "out", jobs=1, accept_weaker_limits=True, say=said.append)
    assert rows[0].status.startswith("not a notebook") and "DOES NOT HOLD" in said[0]


@pytest.mark.slow
@sandboxed
def test_what_holds_without_cgroups_is_measured_as_root_and_as_an_ordinary_user():
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("the ordinary user's run needs root, setpriv and /usr/bin/python3")
    as_root = runner.probe_weaker()
    assert as_root["processes_started"] == 400                         # RLIMIT_NPROC does not bind root
    assert as_root["one_process_past_its_address_space"] == "MemoryError"
    user = runner.probe_weaker(65534)
    assert 200 <= user["processes_started"] < sandbox.LIMITS.processes   # bound, its own few tasks counted
    assert user["one_process_past_its_address_space"] == "MemoryError"
    assert user["held_at_once_mib"] == 3600 > sandbox.LIMITS.memory_bytes >> 20   # memory as a whole: unbounded


@sandboxed
def test_proc_inside_the_sandbox_shows_bwrap_without_the_host_paths_it_binds():
    code = ("import os\nprint(repr(open('/proc/1/cmdline', 'rb').read()))\n"
            "print(sorted(os.listdir('/proc/self/fd')))")
    conf = confine.Confinement(sandbox.LIMITS)
    try:
        out = subprocess.run(conf.wrap(sandbox.command([sys.executable, "-c", code])), capture_output=True,
                             text=True, timeout=60, env={"PATH": "/usr/bin:/bin"}).stdout.splitlines()
    finally:
        conf.close()
    cmdline = eval(out[0])
    assert cmdline.startswith(b"bwrap\0--args\0") and b"--ro-bind" not in cmdline and b"/etc/" not in cmdline
    assert cmdline.split(b"\0")[3:5] == [b"--", sys.executable.encode()]      # then the command, as run
    assert eval(out[1]) == ["0", "1", "2", "3"]                        # stdio and listdir's own: the args file closed
