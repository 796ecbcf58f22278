"""One door per section: typed results decoded from every committed recording hold everything recorded,
and the door's live/replay logic (which is mode logic, tested here without a GPU by forcing the mode)."""
import json
from dataclasses import dataclass, field

import pytest

from launchlab.core import mode, recordings
from launchlab.core.door import Door
from launchlab.faces import recorder


@pytest.mark.parametrize("name", sorted(recorder.RECORDINGS))
def test_typed_results_hold_every_recorded_field(name):
    """Decoding a committed recording into its doors' typed results and encoding them back gives the
    recording's data, key for key and number for number: nothing is dropped or invented on the way."""
    raw = json.loads(recordings.path_of(name).read_text())["data"]
    rebuilt = {}
    for door in recorder.RECORDINGS[name]:
        rebuilt.update(door.dump(door.recorded()))
    assert rebuilt == raw


@pytest.mark.parametrize("name", sorted(recorder.RECORDINGS))
def test_recordings_hash_the_families_their_doors_run(name):
    """Every kernel a recording hashes is one its doors run (the device recording predates kda_decode, so
    it hashes a subset: its register table has no KDA rows; re-recording it adds them)."""
    r = recordings.load(name)
    hashed = {f.rsplit(".", 1)[0] for f in r.kernel_sha if f.endswith(".cu")}
    assert hashed <= set(recorder.families(name))
    if name != "device":
        assert hashed == set(recorder.families(name))


@dataclass
class _Inner:
    a: int
    b: list[float]


@dataclass
class _Outer:
    inner: _Inner
    by_key: dict[int, _Inner]
    pair: tuple[int, int]
    maybe: float | None = None
    note: str = field(default="", metadata={recordings.RECORDED: False})


def test_codec_round_trip_and_refusals():
    v = _Outer(_Inner(1, [0.5]), {128: _Inner(2, [])}, (3, 4))
    d = recordings.encode(v)
    assert d == {"inner": {"a": 1, "b": [0.5]}, "by_key": {"128": {"a": 2, "b": []}}, "pair": [3, 4]}
    back = recordings.decode(_Outer, json.loads(json.dumps(d)))
    assert back == v and isinstance(back.pair, tuple) and list(back.by_key) == [128]
    with pytest.raises(recordings.RecordingError, match="does not know extra"):
        recordings.decode(_Outer, dict(d, extra=1))
    with pytest.raises(recordings.RecordingError, match="cannot build _Inner"):
        recordings.decode(_Outer, dict(d, inner={"a": 1}))


def _door(calls):
    def measure():
        calls.append("measure")
        return {"measured": len(calls)}
    return Door("toy", "device", ("spin",), measure, lambda d, src: {"recorded": src}, lambda r: r)


def test_replay_reads_the_recording(monkeypatch):
    monkeypatch.setattr(mode, "current", lambda: mode.Mode(mode.REPLAY, "test"))
    calls = []
    d = _door(calls)
    assert "NVIDIA H200" in d.data()["recorded"] and calls == []
    assert d.choose(live=lambda: "now", replay=lambda: "then") == "then"


def test_live_measures_once_then_caches(monkeypatch):
    monkeypatch.setattr(mode, "current", lambda: mode.Mode(mode.LIVE, "test"))
    calls = []
    d = _door(calls)
    assert d.data() == {"measured": 1} and d.data() == {"measured": 1} and calls == ["measure"]
    assert d.data(refresh=True) == {"measured": 2}
    assert d.choose(live=lambda: "now", replay=lambda: "then") == "now"
    assert "NVIDIA H200" in d.recorded()["recorded"]          # the recording stays readable in live mode


def _doors():
    from launchlab import sections
    return [d for sec in sections.all() for d in sec.doors]


@pytest.mark.parametrize("door", [d for d in _doors() if d.quick], ids=lambda d: d.recording)
def test_quick_arguments_are_parameters_of_the_measure_they_feed(door):
    """A door's quick arguments are what measure() gets in the course's live run: a name that is not one of its
    parameters (a typo, or a parameter renamed since) would fail only there, on a GPU, mid-notebook."""
    import inspect
    params = inspect.signature(door.measure).parameters
    assert set(door.quick) <= set(params), set(door.quick) - set(params)
    for name, value in door.quick.items():      # and each is a cut of the recorder's default, never the default
        assert value != params[name].default, (name, value)


def test_live_full_gives_measure_the_recorders_arguments(monkeypatch):
    door = next(d for d in _doors() if d.recording == "section02")
    monkeypatch.delenv("LAUNCHLAB_LIVE_FULL", raising=False)
    assert door.live_arguments() == {"rows": 2000, "inflight_reps": 6}
    monkeypatch.setenv("LAUNCHLAB_LIVE_FULL", "0")
    assert door.live_arguments() == {"rows": 2000, "inflight_reps": 6}
    monkeypatch.setenv("LAUNCHLAB_LIVE_FULL", "1")
    assert door.live_arguments() == {}
    monkeypatch.setenv("LAUNCHLAB_LIVE_FULL", "yes")
    with pytest.raises(ValueError, match="LAUNCHLAB_LIVE_FULL"):
        door.live_arguments()
