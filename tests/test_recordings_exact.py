"""Recordings byte for byte and field by field (issue 27: mutation testing): what `save` writes, what `encode`
keeps and leaves out, a door's codec both ways, and the list of recordings."""
import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from launchlab.core import recordings
from launchlab.core.recordings import RECORDED, RecordingError


@dataclass
class Inner:
    x: float
    tag: str | None = None


@dataclass
class Outer:
    name: str
    inner: Inner
    pairs: tuple[int, ...] = ()
    table: dict[int, float] = field(default_factory=dict)
    note: str | None = None                  # None by default: left out when None
    kept: str | None = "default"             # a None here is a value: kept
    cache: list = field(default_factory=list, metadata={RECORDED: False})
    source: str = ""


PROV = {"gpu": "NVIDIA H200", "sm_count": 132, "driver": "580", "cuda_runtime": "13.0", "cupy": "14.2",
        "date": "2026-12-01"}


def test_encode_keeps_the_recorded_fields_and_plain_values():
    o = Outer("a", Inner(np.float32(1.5)), (1, 2), {3: 4.0}, None, None, [9], "src")
    assert recordings.encode(o) == {"name": "a", "inner": {"x": 1.5}, "pairs": [1, 2], "table": {"3": 4.0},
                                    "kept": None, "source": "src"}
    assert recordings.encode(Outer("b", Inner(2.0, "t"), note="n"))["note"] == "n"
    assert recordings.encode(Outer("b", Inner(2.0, "t")))["inner"] == {"x": 2.0, "tag": "t"}
    assert recordings.encode([np.int64(3), (True, None, "s", 2.5)]) == [3, [True, None, "s", 2.5]]
    assert type(recordings.encode(np.int64(3))) is int and type(recordings.encode(np.float32(0.5))) is float
    for bad, name in (({1, 2}, "set"), (Outer, "type"), (object(), "object")):
        with pytest.raises(TypeError) as e:
            recordings.encode(bad)
        assert str(e.value) == f"cannot record a {name}"


def test_save_writes_a_readable_head_and_compact_data_and_nothing_else(tmp_path):
    where = tmp_path / "deep" / "er"
    p = recordings.save("demo", {"a": [1, 2], "b": {"c": 0.5}}, (), PROV, where)
    assert p == where / "demo.json" and sorted(x.name for x in where.iterdir()) == ["demo.json"]
    assert p.read_text() == (
        '{\n "format": 1,\n "name": "demo",\n "provenance": {\n  "gpu": "NVIDIA H200",\n  "sm_count": 132,\n'
        '  "driver": "580",\n  "cuda_runtime": "13.0",\n  "cupy": "14.2",\n  "date": "2026-12-01"\n },\n'
        ' "kernels": {},\n "command": "python -m launchlab record demo   (on a GPU machine; or: make record)",\n'
        ' "data": {"a":[1,2],"b":{"c":0.5}}\n}\n')
    r = recordings.load("demo", where)
    assert (r.name, r.data, r.kernel_sha, r.path) == ("demo", {"a": [1, 2], "b": {"c": 0.5}}, {}, p)
    assert r.describe() == ("demo: NVIDIA H200 (132 SMs), 2026-12-01, driver 580, CUDA runtime 13.0, CuPy 14.2")
    recordings.save("demo", {"a": 3}, ("spin",), PROV, where)                  # replaced whole, with its hashes
    again = json.loads(p.read_text())
    assert again["data"] == {"a": 3} and set(again["kernels"]) >= {"spin.cu"}
    assert recordings.available(where) == ["demo"]


def test_available_lists_json_recordings_only(tmp_path):
    for n in ("b.json", "a.json", "c.txt", "d.json.tmp"):
        (tmp_path / n).write_text("{}")
    assert recordings.available(tmp_path) == ["a", "b"]
    assert "section04" in recordings.available() and "section08" in recordings.available()


def test_a_doors_codec_both_ways():
    parse, dump = recordings.codec(Outer, "outer", "rec")
    o = Outer("a", Inner(1.0), (1,), {2: 3.0}, kept=None)
    d = dump(o)
    assert d == {"outer": recordings.encode(o)}
    back = parse(d, "recorded on the H200")
    assert back.source == "recorded on the H200" and back.inner == Inner(1.0) and back.pairs == (1,)
    assert back.table == {2: 3.0} and back.kept is None and back.name == "a"
    with pytest.raises(RecordingError) as e:
        parse({"outer": []}, "x")
    assert str(e.value) == "rec.outer: expected an object for Outer, got list"
    with pytest.raises(RecordingError) as e:
        parse({"outer": {"name": "a", "inner": {"x": 1.0, "y": 2}}}, "x")
    assert str(e.value) == "rec.outer.inner: Inner does not know y"
    with pytest.raises(KeyError):
        parse({"other": {}}, "x")


def test_decode_builds_each_kind_of_type_and_says_where_it_failed():
    dec = recordings.decode
    assert dec(tuple[int, ...], ["1", "2"]) == (1, 2)                   # ints kept as text are read as ints
    assert dec(tuple[int, str], ["1", "x"]) == (1, "x") and dec(tuple[float, int], [1, "2"]) == (1.0, 2)
    assert dec(list[int], ["3"]) == [3] and dec(dict[int, float], {"4": 1}) == {4: 1.0}
    assert dec(int | None, None) is None and dec(Inner | None, None) is None and dec(int | None, "5") == 5
    assert dec(Inner | None, {"x": 1}) == Inner(1.0)
    for cls, value, message in (
            (Inner, [], "data: expected an object for Inner, got list"),
            (Inner | None, [1], "w: expected an object for Inner, got list"),
            (list[Inner], [{"x": 1}, 2], "w[1]: expected an object for Inner, got int"),
            (tuple[Inner, ...], [{"x": 1}, 2], "w: expected an object for Inner, got int"),
            (tuple[Inner, int], [3, 4], "w: expected an object for Inner, got int"),
            (dict[str, Inner], {"a": 5}, "w['a']: expected an object for Inner, got int"),
            (Outer, {"name": "a"}, "w: cannot build Outer: Outer.__init__() missing 1 required positional "
                                   "argument: 'inner'")):
        with pytest.raises(RecordingError) as e:
            dec(cls, value, "w") if message[0] == "w" else dec(cls, value)
        assert str(e.value) == message, cls


CMD = "Re-record it with: python -m launchlab record {}   (on a GPU machine; or: make record)"


def _refusal(tmp_path, name) -> str:
    with pytest.raises(RecordingError) as e:
        recordings.load(name, tmp_path)
    return str(e.value)


def test_each_refusal_of_a_recording_word_for_word(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"format": 1, "name": "r", "kernels": {}, "data": {}}))
    assert _refusal(tmp_path, "r") == f"recording {p} is corrupt: missing provenance, command. " + CMD.format("r")
    p.write_text(json.dumps([1, 2]))
    assert _refusal(tmp_path, "r") == (f"recording {p} is corrupt: missing format, name, provenance, kernels, "
                                       f"command, data. " + CMD.format("r"))
    doc = {"format": 2, "name": "r", "provenance": {"gpu": "H200", "driver": "x"}, "kernels": {}, "command": "c",
           "data": {"a": 1}}
    p.write_text(json.dumps(doc))
    assert _refusal(tmp_path, "r") == f"recording {p} has format 2, this launchlab reads 1. " + CMD.format("r")
    p.write_text(json.dumps(dict(doc, format=1)))
    assert _refusal(tmp_path, "r") == (f"recording {p} lacks provenance (sm_count, cuda_runtime, cupy, date). "
                                       + CMD.format("r"))
    p.write_text(json.dumps(dict(doc, format=1, provenance=PROV)))
    r = recordings.load("r", tmp_path)
    assert (r.command, r.data, r.provenance) == ("c", {"a": 1}, PROV)


def test_a_stale_recording_names_every_changed_and_deleted_file(tmp_path, monkeypatch):
    import hashlib
    import shutil
    from launchlab.core import sources
    kdir = tmp_path / "kernels"
    shutil.copytree(sources.KERNEL_DIR, kdir)
    monkeypatch.setattr(sources, "KERNEL_DIR", kdir)
    recordings.save("toy", {"n": 1}, ["spin", "stream_read"], PROV, tmp_path)
    old = {f: hashlib.sha256((kdir / f).read_bytes()).hexdigest() for f in ("common.cuh", "spin.cu")}
    (kdir / "common.cuh").write_text((kdir / "common.cuh").read_text() + "\n// edited\n")
    new = hashlib.sha256((kdir / "common.cuh").read_bytes()).hexdigest()
    (kdir / "spin.cu").unlink()
    r = recordings.load("toy", tmp_path, check_stale=False)
    assert sorted(r.stale_files()) == [("common.cuh", old["common.cuh"], new), ("spin.cu", old["spin.cu"], None)]
    with pytest.raises(recordings.StaleRecordingError) as e:
        recordings.load("toy", tmp_path)
    parts = {f"kernels/common.cuh recorded at sha256 {old['common.cuh'][:12]}, now {new[:12]}",
             f"kernels/spin.cu recorded at sha256 {old['spin.cu'][:12]}, now deleted"}
    msg = str(e.value)
    head, tail = msg.split(": ", 1)[0], msg.split(": ", 1)[1]
    assert head == "recording 'toy' is stale"
    listed, rest = tail.split(". Its numbers", 1)
    assert set(listed.split("; ")) == parts
    assert rest == (" no longer describe these kernels. Re-record it with: python -m launchlab record toy   (on a "
                    "GPU machine; or: make record)")


def test_a_recording_that_is_a_bare_number_or_has_unknown_fields(tmp_path):
    (tmp_path / "n.json").write_text("5")
    assert _refusal(tmp_path, "n") == (f"recording {tmp_path / 'n.json'} is corrupt: missing format, name, "
                                       f"provenance, kernels, command, data. " + CMD.format("n"))
    with pytest.raises(RecordingError) as e:
        recordings.decode(Inner, {"x": 1, "z": 3, "y": 2}, "w")
    assert str(e.value) == "w: Inner does not know y, z"


@pytest.mark.parametrize("fmt", [0, 2, "1", None, 1.5])
def test_a_recording_of_an_older_or_newer_or_odd_format_is_refused(tmp_path, fmt):
    """FORMAT is 1: format 0 (older than the loader) is refused as surely as 2 (newer), and so are "1", None
    and 1.5 -- only the integer 1 loads."""
    doc = {"format": fmt, "name": "r", "provenance": PROV, "kernels": {}, "command": "c", "data": {}}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    assert _refusal(tmp_path, "r") == (f"recording {tmp_path / 'r.json'} has format {fmt}, this launchlab reads 1. "
                                       + CMD.format("r"))
    (tmp_path / "r.json").write_text(json.dumps(dict(doc, format=1)))
    assert recordings.load("r", tmp_path).data == {}


def _toy_kernels(tmp_path, monkeypatch):
    """toy.cu includes outer.cuh, which includes inner.cuh and, a second time, shared.cuh (also included by
    toy.cu): a header that includes another, a diamond, and a cycle (inner.cuh includes outer.cuh back)."""
    from launchlab.core import sources
    k = tmp_path / "kernels"
    k.mkdir()
    (k / "toy.cu").write_text('#include "outer.cuh"\n#include "shared.cuh"\n__global__ void toy() {}\n')
    (k / "outer.cuh").write_text('#pragma once\n  #  include "inner.cuh"\n#include "shared.cuh"\n')
    (k / "inner.cuh").write_text('#pragma once\n#include "outer.cuh"\n#define INNER 1\n')
    (k / "shared.cuh").write_text("#pragma once\n#define SHARED 1\n")
    (k / "unused.cuh").write_text("#define UNUSED 1\n")
    monkeypatch.setattr(sources, "KERNEL_DIR", k)
    return k


def test_a_header_included_by_a_header_is_hashed_and_its_edit_makes_the_recording_stale(tmp_path, monkeypatch):
    import hashlib
    from launchlab.core import sources
    k = _toy_kernels(tmp_path, monkeypatch)
    assert [p.name for p in sources.files("toy")] == ["toy.cu", "outer.cuh", "inner.cuh", "shared.cuh"]
    sha = {f: hashlib.sha256((k / f).read_bytes()).hexdigest() for f in ("toy.cu", "outer.cuh", "inner.cuh",
                                                                         "shared.cuh")}
    recordings.save("toy", {"n": 1}, ["toy"], PROV, tmp_path)
    assert json.loads((tmp_path / "toy.json").read_text())["kernels"] == sha      # each once, unused.cuh not at all
    (k / "unused.cuh").write_text("#define UNUSED 2\n")
    assert recordings.load("toy", tmp_path).data == {"n": 1}                        # not a file of this kernel
    (k / "inner.cuh").write_text((k / "inner.cuh").read_text() + "#define MORE 1\n")
    new = hashlib.sha256((k / "inner.cuh").read_bytes()).hexdigest()
    with pytest.raises(recordings.StaleRecordingError) as e:
        recordings.load("toy", tmp_path)
    assert f"kernels/inner.cuh recorded at sha256 {sha['inner.cuh'][:12]}, now {new[:12]}" in str(e.value)
    assert "outer.cuh" not in str(e.value) and "toy.cu" not in str(e.value)


def test_a_header_that_includes_a_header_not_in_kernels_is_named(tmp_path, monkeypatch):
    from launchlab.core import sources
    k = _toy_kernels(tmp_path, monkeypatch)
    (k / "inner.cuh").write_text('#include "gone.cuh"\n')
    with pytest.raises(sources.KernelError) as e:
        sources.files("toy")
    assert str(e.value) == f"inner.cuh includes 'gone.cuh', which is not in {k}"
