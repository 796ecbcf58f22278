"""Dumps and cmp: bytes, not tolerances, decide identity; a damaged dump is refused with a reason."""
import subprocess
import sys

import numpy as np
import pytest

from launchlab.core import dumps


def write(path, logits, hidden=None, meta=None):
    arrays = {"logits": (logits.shape[1:], logits.dtype)}
    if hidden is not None:
        arrays["hidden.layer2"] = (hidden.shape[1:], hidden.dtype)
    with dumps.Writer(path, arrays, meta) as w:
        for p in range(logits.shape[0]):
            rec = {"logits": logits[p]}
            if hidden is not None:
                rec["hidden.layer2"] = hidden[p]
            w.add(100 + p, rec)
    return path


@pytest.fixture
def arrays():
    r = np.random.default_rng(0)
    return r.standard_normal((5, 64)).astype(np.float32), r.standard_normal((5, 16)).astype(np.float32)


def test_same_bytes_are_identical_whatever_the_meta(tmp_path, arrays):
    lg, hd = arrays
    a = write(tmp_path / "a.dump", lg, hd, {"LAUNCHLAB_KDA_VT": "0"})
    b = write(tmp_path / "b.dump", lg.copy(), hd.copy(), {"LAUNCHLAB_KDA_VT": "1"})
    c = dumps.cmp(a, b)
    assert c.identical and c.differing == 0 and c.records == 5 and c.elements == 5 * 80
    assert c.fingerprints[0] == c.fingerprints[1] and "IDENTICAL" in c.describe()
    assert dumps.load(a).meta == {"LAUNCHLAB_KDA_VT": "0"}
    assert list(dumps.load(a).positions) == [100, 101, 102, 103, 104]


def test_one_ulp_is_found_where_a_tolerance_sees_nothing(tmp_path, arrays):
    lg, hd = arrays
    lg2, hd2 = lg.copy(), hd.copy()
    hd2[3, 7] = np.nextafter(hd2[3, 7], np.float32(np.inf))
    lg2[4, 0] = np.nextafter(lg2[4, 0], np.float32(-np.inf))
    assert np.allclose(lg, lg2, rtol=1e-6, atol=0) and np.allclose(hd, hd2, rtol=1e-6, atol=0)
    c = dumps.cmp(write(tmp_path / "a", lg, hd), write(tmp_path / "b", lg2, hd2))
    assert not c.identical and c.differing == 2
    assert c.first == (103, "hidden.layer2", 7) and c.per_array == {"logits": 1, "hidden.layer2": 1}
    assert c.first_values[0] != c.first_values[1] and "DIFFER: first at position 103" in c.describe()


def test_negative_zero_is_not_zero_in_bytes(tmp_path):
    a = np.zeros((1, 4), np.float32)
    b = a.copy()
    b[0, 2] = -0.0
    assert np.array_equal(a, b)                                   # == says equal
    assert dumps.cmp(write(tmp_path / "a", a), write(tmp_path / "b", b)).differing == 1   # bytes do not


@pytest.mark.parametrize("damage, match", [
    (lambda raw: raw[:-3], "truncated -- "),
    (lambda raw: b"NOTADUMP" + raw[8:], "not a launchlab dump"),
    (lambda raw: raw[:20], "truncated inside its header"),
])
def test_damaged_dumps_are_refused_with_a_reason(tmp_path, arrays, damage, match):
    good = write(tmp_path / "good", arrays[0])
    bad = tmp_path / "bad"
    bad.write_bytes(damage(good.read_bytes()))
    with pytest.raises(dumps.DumpError, match=match):
        dumps.load(bad)


def test_incomparable_dumps_and_bad_records_are_refused(tmp_path, arrays):
    lg, hd = arrays
    a, b = write(tmp_path / "a", lg, hd), write(tmp_path / "b", lg)
    with pytest.raises(dumps.DumpError, match="hold different arrays"):
        dumps.cmp(a, b)
    with pytest.raises(dumps.DumpError, match="hold different positions"):
        dumps.cmp(a, write(tmp_path / "c", lg[:3], hd[:3]))
    with dumps.Writer(tmp_path / "d", {"logits": ((64,), np.float32)}) as w:
        with pytest.raises(dumps.DumpError, match="float32"):
            w.add(0, {"logits": lg[0].astype(np.float64)})


def test_the_cmp_command_exit_codes(tmp_path, arrays):
    lg, _ = arrays
    a, b = write(tmp_path / "a", lg), write(tmp_path / "b", lg + 1)
    run = lambda *args: subprocess.run([sys.executable, "-m", "launchlab", "cmp", *map(str, args)],
                                       capture_output=True, text=True)
    assert run(a, a).returncode == 0
    r = run(a, b)
    assert r.returncode == 1 and "DIFFER" in r.stdout
    r = run(a, tmp_path / "missing")
    assert r.returncode == 2 and "no such dump" in r.stderr


def test_cmp_reports_the_first_difference_and_counts_every_one(tmp_path, arrays):
    """Three differences in position 1's logits (elements 5, 17, 40) and one in position 3's hidden (element 2):
    the first reported is record 1 (position 101: write() numbers positions from 100), logits, element 5; four
    differ in all, three in logits, one in hidden."""
    lg, hd = arrays
    lg2, hd2 = lg.copy(), hd.copy()
    for e in (40, 5, 17):
        lg2[1, e] += 1.0
    hd2[3, 2] = -hd2[3, 2]
    c = dumps.cmp(write(tmp_path / "a", lg, hd), write(tmp_path / "b", lg2, hd2))
    assert not c.identical and c.first == (101, "logits", 5)
    assert c.first_values == (float(lg[1, 5]), float(lg2[1, 5]))
    assert c.differing == 4 and c.per_array == {"logits": 3, "hidden.layer2": 1}
    assert c.elements == 5 * (64 + 16)
