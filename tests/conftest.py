import os

import pytest

from launchlab import mode


def pytest_collection_modifyitems(config, items):
    if mode.is_live():
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU (replay mode: {mode.current().reason})")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def clean_gates(monkeypatch):
    for k in list(os.environ):
        if k.startswith("LAUNCHLAB_") and k not in ("LAUNCHLAB_MODE", "LAUNCHLAB_DATA", "LAUNCHLAB_KERNELS"):
            monkeypatch.delenv(k)
    yield
