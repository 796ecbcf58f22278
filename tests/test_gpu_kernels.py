"""Live only: every kernel against its numpy reference on the GPU (the same checks the recorder stores)."""
import pytest

pytestmark = pytest.mark.gpu


def test_selftest_all_pass():
    from launchlab import selftest
    res = selftest.run()
    bad = {k: m for k, (ok, m) in res.items() if not ok}
    assert not bad, bad
