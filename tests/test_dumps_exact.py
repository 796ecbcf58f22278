"""A dump's bytes laid out by hand, and every refusal and report word for word (launchlab.core.dumps)."""
import json
import struct

import numpy as np
import pytest

from launchlab.core import dumps


def test_the_file_is_the_documented_layout_byte_for_byte(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with dumps.Writer(tmp_path / "d", {"x": ((2, 3), np.float32)}, {"Z": 1, "A": "b"}) as w:
        w.add(3_000_000_000, {"x": a})                  # a position past 2^31: unsigned, as documented
        w.add(7, {"x": a + 1})
        assert w.records == 2
    header = json.dumps({"arrays": [["x", "<f4", [2, 3]]], "meta": {"A": "b", "Z": 1}}, sort_keys=True).encode()
    want = (b"LLDUMP\x00\x01" + struct.pack("<I", len(header)) + header
            + struct.pack("<I", 3_000_000_000) + a.tobytes() + struct.pack("<I", 7) + (a + 1).tobytes())
    assert (tmp_path / "d").read_bytes() == want
    d = dumps.load(tmp_path / "d")
    assert d.positions.tolist() == [3_000_000_000, 7] and d.positions.dtype == np.int64
    assert d.meta == {"A": "b", "Z": 1} and d.record_bytes == 4 + 24
    assert d.array(1, "x").shape == (2, 3) and np.array_equal(d.array(1, "x"), a + 1)
    assert d.offsets() is d.offsets() and d.offsets() == {"x": (4, dumps.ArraySpec("x", "<f4", (2, 3)))}


def test_a_header_without_meta_reads_as_empty_meta(tmp_path):
    header = json.dumps({"arrays": [["x", "<f4", [1]]]}).encode()
    (tmp_path / "d").write_bytes(b"LLDUMP\x00\x01" + struct.pack("<I", len(header)) + header
                                 + struct.pack("<I", 0) + np.float32(1).tobytes())
    assert dumps.load(tmp_path / "d").meta == {}


def _msg(fn):
    with pytest.raises(dumps.DumpError) as e:
        fn()
    return str(e.value)


def test_every_refusal_word_for_word(tmp_path):
    good = b"LLDUMP\x00\x01"
    (tmp_path / "short").write_bytes(good + b"\x00\x00\x00")                  # 11 bytes
    assert _msg(lambda: dumps.load(tmp_path / "short")) == \
        "short: not a launchlab dump (the first bytes are not b'LLDUMP\\x00\\x01')"
    (tmp_path / "twelve").write_bytes(good + struct.pack("<I", 0))            # 12 bytes: a header of length 0
    assert _msg(lambda: dumps.load(tmp_path / "twelve")).startswith("twelve: unreadable header (JSONDecodeError: ")
    (tmp_path / "cut").write_bytes(good + struct.pack("<I", 10) + b"{}")
    assert _msg(lambda: dumps.load(tmp_path / "cut")) == \
        "cut: truncated inside its header (14 bytes, the header ends at 22)"
    (tmp_path / "exact").write_bytes(good + struct.pack("<I", 2) + b"{}")      # the header ends at the file's end
    assert _msg(lambda: dumps.load(tmp_path / "exact")) == "exact: unreadable header (KeyError: 'arrays')"
    header = json.dumps({"arrays": [["x", "<f4", [2]]]}).encode()
    (tmp_path / "tail").write_bytes(good + struct.pack("<I", len(header)) + header + b"\x00" * (12 * 2 + 5))
    assert _msg(lambda: dumps.load(tmp_path / "tail")) == (
        "tail: truncated -- 5 bytes after its last whole record (2 records of 12 bytes); the writer stopped early")
    assert _msg(lambda: dumps.Writer(tmp_path / "none", {})) == "a dump needs at least one array"
    with dumps.Writer(tmp_path / "w", {"x": ((2,), np.float32)}) as w:
        assert _msg(lambda: w.add(5, {"y": np.zeros(2, np.float32)})) == \
            "record for position 5 has arrays ['y'], the dump holds ['x']"
        assert w.records == 0
    d = dumps.load(tmp_path / "w")
    with pytest.raises(KeyError) as e:
        d.array(0, "y")
    assert e.value.args[0] == "no array 'y' in w; it holds ['x']"


def _write(path, positions, values):
    with dumps.Writer(path, {"logits": ((3,), np.float32), "h": ((2,), np.float32)}) as w:
        for p, v in zip(positions, values):
            w.add(p, {"logits": np.full(3, v, np.float32), "h": np.zeros(2, np.float32)})
    return dumps.load(path)


def test_the_comparison_word_for_word(tmp_path):
    a = _write(tmp_path / "a", range(6), [1.0] * 6)
    same = dumps.cmp(a, _write(tmp_path / "b", range(6), [1.0] * 6))           # Dumps, not paths
    assert same.identical and same.records == 6 and same.elements == 30 and same.differing == 0
    assert same.per_array == {"logits": 0, "h": 0} and same.first is None
    assert same.describe() == f"IDENTICAL: 6 positions, 30 elements, byte for byte (sha256 {a.fingerprint()[:16]})"
    c = _write(tmp_path / "c", range(6), [1.0, 1.0, 2.0, 1.0, 1.0, 1.0])
    one = dumps.cmp(a, c)
    assert not one.identical and one.differing == 3 and one.first == (2, "logits", 0)
    d = dumps.cmp(tmp_path / "a", tmp_path / "c")
    assert d.describe() == (f"DIFFER: first at position 2, logits, element 0 (1.0 vs 2.0); 3 of 30 elements differ "
                            f"(logits 3); sha256\n        {a.fingerprint()[:16]} vs {c.fingerprint()[:16]}")  # 110 wide


def test_a_single_differing_element_is_not_identical(tmp_path):
    a = _write(tmp_path / "a", range(2), [1.0, 1.0])
    with dumps.Writer(tmp_path / "b", {"logits": ((3,), np.float32), "h": ((2,), np.float32)}) as w:
        w.add(0, {"logits": np.full(3, 1.0, np.float32), "h": np.zeros(2, np.float32)})
        w.add(1, {"logits": np.full(3, 1.0, np.float32), "h": np.array([0.0, -0.0], np.float32)})
    c = dumps.cmp(a, dumps.load(tmp_path / "b"))
    assert (c.identical, c.differing, c.per_array, c.first) == (False, 1, {"logits": 0, "h": 1}, (1, "h", 1))
    two = dumps.cmp(_write(tmp_path / "x", range(2), [1.0, 2.0]), _write(tmp_path / "y", range(2), [3.0, 4.0]))
    assert two.per_array == {"logits": 6, "h": 0}                       # counted over both records


def test_different_positions_are_named(tmp_path):
    a = _write(tmp_path / "a", range(6), [1.0] * 6)
    b = _write(tmp_path / "b", range(1, 7), [1.0] * 6)
    assert _msg(lambda: dumps.cmp(a, b)) == "a and b hold different positions ([0, 1, 2, 3]... vs [1, 2, 3, 4]...)"


def test_two_dimensional_arrays_and_two_arrays_differing(tmp_path):
    spec = {"m": ((2, 3), np.float32), "v": ((2,), np.float32)}
    m = np.zeros((2, 3), np.float32)
    with dumps.Writer(tmp_path / "a", spec) as w:
        w.add(0, {"m": m, "v": np.zeros(2, np.float32)})
    m2 = m.copy()
    m2[1, 2] = 5.0                                            # flat element 5
    with dumps.Writer(tmp_path / "b", spec) as w:
        w.add(0, {"m": m2, "v": np.ones(2, np.float32)})
    c = dumps.cmp(tmp_path / "a", tmp_path / "b")
    assert c.first == (0, "m", 5) and c.first_values == (0.0, 5.0) and c.records == 1 and c.elements == 8
    assert "differ (m 1, v 2); sha256" in c.describe()


def test_a_missing_dump_is_named():
    assert _msg(lambda: dumps.load("/no/such/place.dump")) == "/no/such/place.dump: no such dump"
