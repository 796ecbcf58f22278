"""Recordings: provenance present, fresh against kernels/, and refusing when missing, corrupt or stale."""
import json
import shutil

import pytest

from launchlab.core import recordings, sources

NAMES = ("device", "occupancy", "section01", "section02")


@pytest.mark.parametrize("name", NAMES)
def test_committed_recording_loads_fresh_with_provenance(name):
    r = recordings.load(name)          # raises StaleRecordingError with the re-record command if stale
    for k in ("gpu", "sm_count", "driver", "cuda_runtime", "cupy", "date"):
        assert r.provenance[k]
    assert r.provenance["gpu"] == "NVIDIA H200" and r.provenance["sm_count"] == 132
    assert r.kernel_sha and all(len(v) == 64 for v in r.kernel_sha.values())


def test_missing_recording(tmp_path):
    with pytest.raises(recordings.RecordingError, match="python -m launchlab record nothing"):
        recordings.load("nothing", tmp_path)


def test_corrupt_recordings(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(recordings.RecordingError, match="unreadable.*record bad"):
        recordings.load("bad", tmp_path)
    (tmp_path / "half.json").write_text(json.dumps({"format": 1, "name": "half"}))
    with pytest.raises(recordings.RecordingError, match="corrupt: missing provenance"):
        recordings.load("half", tmp_path)


def test_stale_recording_names_the_file_and_the_command(tmp_path, monkeypatch):
    kdir = tmp_path / "kernels"
    shutil.copytree(sources.KERNEL_DIR, kdir)
    monkeypatch.setattr(sources, "KERNEL_DIR", kdir)
    prov = {"gpu": "NVIDIA H200", "sm_count": 132, "driver": "x", "cuda_runtime": "x", "cupy": "x", "date": "x"}
    recordings.save("toy", {"n": 1}, ["stream_read"], prov, tmp_path)
    assert recordings.load("toy", tmp_path).data == {"n": 1}
    (kdir / "common.cuh").write_text((kdir / "common.cuh").read_text() + "\n// edited\n")
    with pytest.raises(recordings.StaleRecordingError) as e:
        recordings.load("toy", tmp_path)
    assert "kernels/common.cuh" in str(e.value) and "python -m launchlab record toy" in str(e.value)
