"""launchlab.core.reuse: a live measurement is read again by a later notebook only while GPU, kernels, code and
gates all match and it is young enough; anything else measures again. The GPU identity is the one thing
faked here (this machine has none); the door, its dump and parse, the files and the gates are the real ones."""
import json
from dataclasses import dataclass

import pytest

from launchlab.core import door, gates, mode, reuse, sources


@dataclass
class Result:
    value: float
    source: str = "live"


def make_door(calls):
    def measure():
        calls.append(1)
        return Result(1.5 + len(calls))
    return door.Door("a test measurement", "testrec", ("rms_norm",), measure,
                     lambda d, src: Result(d["value"], src), lambda r: {"value": r.value})


@pytest.fixture
def live(monkeypatch, tmp_path, clean_gates):
    monkeypatch.setenv("LAUNCHLAB_LIVE_DIR", str(tmp_path))
    monkeypatch.setattr(mode, "is_live", lambda: True)
    monkeypatch.setattr(reuse, "_gpu", lambda: "host 0000:19:00.0 NVIDIA H200")
    return tmp_path


def test_a_later_notebook_reads_the_measurement_back_and_says_so(live, capsys):
    calls = []
    first = make_door(calls).data()
    again = make_door(calls).data()           # a new Door: another notebook's process
    assert calls == [1] and again.value == first.value == 2.5
    assert "reused" in again.source and "refresh=True" in again.source
    assert "reused: measured live on this GPU" in capsys.readouterr().out
    doc = json.loads(reuse.path_of(make_door([])).read_text())
    assert doc["identity"]["kernels"] == sources.sha256s("rms_norm") and doc["data"] == {"value": 2.5}


@pytest.mark.parametrize("change", ["gate", "other_device", "kernel", "age", "off", "refresh", "corrupt"])
def test_anything_that_no_longer_matches_measures_again(live, monkeypatch, change):
    calls = []
    make_door(calls).data()
    d = make_door(calls)
    if change == "gate":
        monkeypatch.setenv("LAUNCHLAB_RMS_WIDE", "0")
    elif change == "other_device":
        monkeypatch.setattr(reuse, "_gpu", lambda: "host 0000:2a:00.0 NVIDIA H200")
    elif change == "kernel":
        real = sources.sha256s
        monkeypatch.setattr(sources, "sha256s", lambda fam: {k: "0" * 64 for k in real(fam)})
    elif change == "age":
        monkeypatch.setenv("LAUNCHLAB_LIVE_REUSE_S", "0.000001")
    elif change == "off":
        monkeypatch.setenv("LAUNCHLAB_LIVE_REUSE_S", "0")
    elif change == "corrupt":
        reuse.path_of(d).write_text("{not json")
    d.data(refresh=change == "refresh")
    assert calls == [1, 1]


def test_a_bad_setting_names_the_fix_and_a_door_without_dump_is_never_kept(live, monkeypatch):
    monkeypatch.setenv("LAUNCHLAB_LIVE_REUSE_S", "soon")
    with pytest.raises(reuse.ReuseError, match="a number >= 0"):
        reuse.max_age_s()
    monkeypatch.delenv("LAUNCHLAB_LIVE_REUSE_S")
    view = door.Door("a view", "testrec", ("rms_norm",), lambda: Result(1.0), lambda d, s: Result(d["value"], s))
    assert reuse.save(view, Result(1.0)) is None and reuse.load(view) is None


def test_the_identity_holds_every_gate_the_module_and_the_gpu(live):
    ident = reuse.identity(make_door([]))
    assert set(ident["gates"]) == set(gates.GATES) and ident["gpu"].endswith("NVIDIA H200")
    assert len(ident["code"]) == 64          # the test module's own sha256: where this door's measure() lives


def test_every_live_data_call_is_logged_with_its_time_measured_or_reused(live):
    calls = []
    make_door(calls).data()
    make_door(calls).data()
    rows = reuse.logged()
    assert [r["reused"] for r in rows] == [False, True] and all(r["door"] == "a test measurement" for r in rows)
    assert all(r["seconds"] >= 0 for r in rows)
