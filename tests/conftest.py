import os

import pytest

from launchlab.core import mode

# What a test needs beyond the course's code, by the name its `needs` marker gives: each check returns None when
# it is here, else what is missing and how to get it. Absent, the test is skipped with that reason; where CI says
# everything `make setup` installs must be here (LAUNCHLAB_CI=1, set by .ci/run), it fails instead, so CI is never
# green without the sandbox or a development dependency.


def _sandbox():
    from launchlab.faces import sandbox
    why = sandbox.available()
    return None if why is None else f"the grading sandbox cannot start here: {why}"


def _otter():
    from launchlab.faces import grading
    return None if grading.otter_available() else "otter-grader (the [grade] extra; make setup installs it) is absent"


def _cccl():
    from launchlab.faces import archs
    try:
        archs.arch_traits_header()
    except FileNotFoundError as e:
        return str(e)
    return None


def _nvrtc():
    from launchlab.core import compiler
    v = compiler.nvrtc_version()
    return None if v >= (13, 5) else (f"needs the NVRTC the course pins, 13.5 (nvidia-cuda-nvrtc~=13.5.0, make setup); "
                                      f"this one is {v[0]}.{v[1]}")


def _make_test_report():
    from launchlab.faces import testsuite
    return None if testsuite.MAKE_TEST.exists() else (
        "no kept measurement of make test on a fresh clone yet (data/tests/make_test.json): python "
        "tools/clean_clone.py measures it -- in that fresh clone itself it cannot be there yet")


NEEDS = {"sandbox": _sandbox, "otter": _otter, "cccl": _cccl, "nvrtc": _nvrtc, "make_test_report": _make_test_report}
_found: dict[str, str | None] = {}


def ci_requires_everything() -> bool:
    v = os.environ.get("LAUNCHLAB_CI", "").strip()
    if v not in ("", "0", "1"):
        raise pytest.UsageError(f"LAUNCHLAB_CI={v!r}: 1 (CI: every prerequisite must be here) or 0")
    return v == "1"


def missing(name: str) -> str | None:
    """What is missing of the prerequisite `name`, or None (each checked once per session)."""
    if name not in NEEDS:
        raise pytest.UsageError(f"needs({name!r}): known prerequisites are {sorted(NEEDS)}")
    if name not in _found:
        _found[name] = NEEDS[name]()
    return _found[name]


def need(name: str) -> None:
    """Inside a test, from here on: skip (or, under LAUNCHLAB_CI=1, fail) unless prerequisite `name` is here."""
    why = missing(name)
    if why is None:
        return
    if ci_requires_everything():
        pytest.fail(f"{why} (LAUNCHLAB_CI=1: CI requires it)", pytrace=False)
    pytest.skip(why)


def pytest_runtest_setup(item):
    for m in item.iter_markers("needs"):
        for name in m.args:
            need(name)


def pytest_collection_modifyitems(config, items):
    if mode.is_live():
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU (replay mode: {mode.current().reason})")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _live_measurements_kept_apart(tmp_path_factory):
    """Live doors keep their results for later notebooks (launchlab.core.reuse): the tests keep theirs in a
    folder of their own, so no test reads what a notebook, or an earlier test run, measured."""
    old = os.environ.get("LAUNCHLAB_LIVE_DIR")
    os.environ["LAUNCHLAB_LIVE_DIR"] = str(tmp_path_factory.mktemp("live"))
    yield
    if old is None:
        os.environ.pop("LAUNCHLAB_LIVE_DIR", None)
    else:
        os.environ["LAUNCHLAB_LIVE_DIR"] = old


@pytest.fixture(scope="session")
def _figures_once():
    from launchlab.faces import summary
    return summary.figures()


@pytest.fixture
def summary_figures(_figures_once):
    """`summary --json`'s figures, computed once per test process (about 12 s; they are read from the committed
    recordings and reports, which no test changes), each test given its own copy."""
    import copy
    return copy.deepcopy(_figures_once)


@pytest.fixture
def clean_gates(monkeypatch):
    for k in list(os.environ):
        if k.startswith("LAUNCHLAB_") and k not in ("LAUNCHLAB_MODE", "LAUNCHLAB_DATA", "LAUNCHLAB_KERNELS",
                                                  "LAUNCHLAB_LIVE_DIR", "LAUNCHLAB_CI", "LAUNCHLAB_BWRAP"):
            monkeypatch.delenv(k)
    yield


@pytest.fixture(autouse=True, scope="session")
def _weaker_limits_said_and_accepted():
    """Where no cgroup can be made (a container without delegation, an ordinary user), `grade` refuses untrusted
    work unless told LAUNCHLAB_ACCEPT_WEAKER_LIMITS=1 (issue 56): the tests grade their own fixtures there, so they
    accept it -- and test_grading_limits.py checks the refusal itself with the setting off."""
    from launchlab.faces import confine, sandbox
    conf = confine.Confinement(sandbox.LIMITS)
    bounded = conf.bounded()
    conf.close()
    if bounded or os.environ.get(confine.ACCEPT_WEAKER) is not None:
        yield
        return
    os.environ[confine.ACCEPT_WEAKER] = "1"
    yield
    os.environ.pop(confine.ACCEPT_WEAKER, None)
