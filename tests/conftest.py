import os

import pytest

from launchlab.core import mode


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


@pytest.fixture
def clean_gates(monkeypatch):
    for k in list(os.environ):
        if k.startswith("LAUNCHLAB_") and k not in ("LAUNCHLAB_MODE", "LAUNCHLAB_DATA", "LAUNCHLAB_KERNELS",
                                                  "LAUNCHLAB_LIVE_DIR"):
            monkeypatch.delenv(k)
    yield
