"""§8: the recorded reassociation facts -- same S same bytes, other S other bytes inside the bound, the blind
gate, batch invariance, and the bounded skip -- on the H200 recording (any machine)."""
import numpy as np
import pytest

from launchlab.kernels import mla
from launchlab.sections.s08_reshape import reassociation


@pytest.fixture(scope="module")
def data():
    return reassociation.recorded()


def test_headline(data):
    h = reassociation.headline(data)
    assert h["split_bytes_identical_same_s"] and h["split_bytes_differ_across_s"]
    assert h["split_max_err_over_bound"] <= 1.0
    assert h["gate_4096_identical"] and h["gate_131072_differ"]
    assert h["batch_invariant_fixed_slice"] and not h["batch_invariant_derived"]
    assert h["skip_inert_at_or_below_16384"] and h["skip_err_over_bound_max"] <= 1.0


def test_the_base_split_count_differs_from_itself_nowhere(data):
    assert data.at(reassociation.BASE_S).n_differ == 0
    assert len({b.sha for b in data.by_splits}) == len(data.by_splits)


def test_skip_engages_only_past_16384(data):
    for s in data.skip:
        assert (s.threshold > 0) == (s.ctx > mla.SKIP_MIN_CTX) == (not s.identical)


def test_skip_bound_on_a_constructed_case():
    """Two splits at weight 1, one at 1e-6 (below the threshold) whose output is far off: the bound covers the
    exact shift the drop causes."""
    o = np.zeros((3, 1, 4), np.float32)
    o[0], o[1], o[2] = 1.0, 3.0, 100.0
    lse = np.log(np.array([[1.0], [1.0], [1e-6]]))
    dropped, bound = reassociation.skip_bound(o, lse, 1e-5)
    exact = (1 * 1 + 1 * 3 + 1e-6 * 100) / (2 + 1e-6)
    assert dropped == 1 and abs(exact - 2.0) <= bound
