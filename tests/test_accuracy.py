"""KL and top-1 arithmetic (any machine)."""
import numpy as np
import pytest

from launchlab.sections.s02_width import accuracy


def test_kl_is_zero_for_identical_logits_and_matches_a_hand_computation():
    a = np.array([[1.0, 2.0, 3.0]], np.float32)
    assert accuracy.agreement([0], a, a.copy()).kl == [0.0]
    b = np.array([[1.0, 2.0, 2.5]], np.float32)
    a64, b64 = a[0].astype(np.float64), b[0].astype(np.float64)
    p, q = np.exp(a64) / np.exp(a64).sum(), np.exp(b64) / np.exp(b64).sum()
    assert accuracy.kl(a, b)[0] == pytest.approx(float(np.sum(p * np.log(p / q))), rel=1e-12)


def test_kl_is_not_symmetric_and_large_logits_do_not_overflow():
    a = np.array([[1000.0, 999.0, 998.0]])
    b = np.array([[1000.0, 1000.0, 998.0]])
    k1, k2 = accuracy.kl(a, b)[0], accuracy.kl(b, a)[0]
    assert np.isfinite(k1) and np.isfinite(k2) and k1 != pytest.approx(k2)


def test_agreement_counts_top1_and_bytes_per_position():
    r = np.random.default_rng(0).standard_normal((4, 50)).astype(np.float32)
    arm = r.copy()
    arm[1] *= np.float32(1.001)                                       # a small change
    arm[2] = arm[2][::-1]                                             # a different distribution
    arm[3, 0] = np.nextafter(arm[3, 0], np.float32(np.inf))          # one ulp: bytes differ, KL ~ 1e-15 or 0
    ag = accuracy.agreement([10, 11, 12, 13], r, arm)
    assert ag.identical == [True, False, False, False] and ag.kl[0] == 0.0
    assert 0 < ag.kl[1] < 1e-4 < ag.kl[2] and ag.top1[1] and ag.kl[3] < 1e-12 and ag.top1_rate >= 0.5
    with pytest.raises(ValueError, match="positions, vocab"):
        accuracy.agreement([0], r[0], arm[0])
