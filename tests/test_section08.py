"""§8: the recorded reassociation facts -- same S same bytes, other S other bytes inside the bound, the blind
gate, batch invariance, and the bounded skip -- on the H200 recording (any machine)."""
import numpy as np
import pytest

from launchlab.core import floatbits
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


def test_ulp_distance_counts_the_floats_between_two_values():
    """By hand: 1 and the next float up are 1 apart; 1 + 2^-23 * 5 is 5 from 1; +0 and -0 are 0 apart; the
    smallest subnormals either side of zero are 2 apart (-tiny, -0 = +0, +tiny); 1 and -1 are 2 x 0x3F800000."""
    one = np.float32(1.0)
    a = np.array([1.0, 1.0, 0.0, 1e-45, 1.0, 2.0], np.float32)
    b = np.array([np.nextafter(one, np.float32(2)), 1 + 5 * 2.0 ** -23, -0.0, -1e-45, -1.0, 2.0], np.float32)
    assert floatbits.ulp_distance(a, b).tolist() == [1, 5, 0, 2, 2 * 0x3F800000, 0]
    assert floatbits.ulp_distance(b, a).tolist() == floatbits.ulp_distance(a, b).tolist()


def test_ulp_histogram_bins_both_edges_of_every_bin():
    dist = np.array([0, 0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 10 ** 9])
    assert reassociation.ulp_histogram(dist) == [2, 1, 1, 2, 2, 2, 2]
    assert [reassociation.ulp_label(i) for i in range(len(reassociation.ULP_BINS))] == \
        ["0", "1", "2", "3–4", "5–8", "9–16", "> 16"]


def test_every_recorded_split_count_s_histograms_account_for_every_output(data):
    for b in data.by_splits:
        assert sum(b.ulps) == data.elements and b.ulps[0] == data.elements - b.n_differ
        assert sum(b.bound_use) == data.elements and b.bound_use[0] == data.elements - b.n_differ
        assert (b.max_ulps == 0) == (b.n_differ == 0) == (b.own_ulps_median == 0) == (b.max_bound_use == 0)
        assert b.max_bound_use <= 1.0 and b.sign_flips <= b.n_differ


def test_bound_histogram_bins_both_edges():
    share = np.array([0.0, 0.0, 1e-6, 1e-4, 1.0001e-4, 1e-3, 5e-3, 1e-2, 0.02, 3.0])
    assert reassociation.bound_histogram(share) == [2, 2, 2, 2, 2]
    assert [reassociation.bound_label(i) for i in range(5)] == ["0 (same bytes)", "≤ 0.01 %", "0.01 %–0.1 %",
                                                                "0.1 %–1 %", "> 1 %"]


def test_the_gate_is_blind_at_every_depth_the_parity_suite_grades(data):
    """At or below SPLIT_MIN_CTX both arms launch one split, so every graded depth (<= 4,096) is identical."""
    from launchlab.kernels import splits
    for g in data.gate:
        if g.ctx <= splits.SPLIT_MIN_CTX:
            assert g.splits_hardcoded == g.splits_derived == 1 and g.identical
    assert [g.ctx for g in data.gate] == list(reassociation.GATE_CTX)


def test_prefetched_inputs_are_the_inputs_drawn_one_after_another(monkeypatch):
    """measure() draws its later parts' inputs in worker threads: each from its own seed, so the values are the
    serial draw's, whatever the threads' order (checked at small contexts, on the CPU)."""
    from concurrent.futures import ThreadPoolExecutor
    monkeypatch.setattr(reassociation, "GATE_CTX", (64, 512, 96))
    monkeypatch.setattr(reassociation, "SKIP_CTX", (128, 4096))
    with ThreadPoolExecutor(3) as pool:
        got = reassociation._prefetch(pool, 256)
        gate = [j.result() for j in got["gate"]]
        batch = got["batch"].result()
        skip = [j.result() for j in got["skip"]]
    want_gate = [mla.inputs(1, 16, c, seed=9) for c in (64, 512, 96)]
    for g, w in zip(gate, want_gate):
        assert g["kv"].shape == w["kv"].shape and np.array_equal(g["kv"], w["kv"]) and np.array_equal(g["q"], w["q"])
    w = mla.inputs(2, 16, 256, seed=10)
    assert np.array_equal(batch["kv"], w["kv"]) and batch["kv"].shape == (2, 256, mla.D)
    for s, c in zip(skip, (128, 4096)):
        w = mla.inputs_recent(1, 16, c)
        assert np.array_equal(s["kv"], w["kv"]) and np.array_equal(s["q"], w["q"])
    assert not np.array_equal(gate[0]["kv"], mla.inputs(1, 16, 64, seed=8)["kv"])   # the seed matters
