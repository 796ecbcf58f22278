"""Who else is on the GPU (launchlab.core.sharing): what is said beside a timing (any machine); NVML on a GPU."""
import subprocess
import sys

import pytest

from launchlab.core import mode, sharing, timing

live = pytest.mark.skipif(not mode.is_live(), reason="needs a GPU")


def test_whole_and_alone_says_nothing_and_everything_else_says_why():
    whole = sharing.Sharing("NVIDIA H200", False, 132, 139.8, 0, 0.0)
    assert whole.alone and whole.note() == ""
    mig = sharing.Sharing("NVIDIA H200", True, 60, 70.0, 0, 0.0)
    assert not mig.alone and "MIG slice" in mig.note() and "60 SMs" in mig.note()
    busy = sharing.Sharing("NVIDIA H200", False, 132, 139.8, 2, 12.25)
    assert "2 other processes (12.2 GiB)" in busy.note() and "unreliable" in busy.note()
    one = sharing.Sharing("NVIDIA H200", False, 132, 139.8, 1, 1.0)
    assert "1 other process " in one.note()
    unknown = sharing.Sharing("NVIDIA H200", False, 132, 139.8, 0, 0.0, "NVMLError: not found")
    assert not unknown.alone and "unknown" in unknown.note()


def test_other_processes_are_counted_with_or_without_our_own_pid_in_the_list():
    assert sharing.others([10, 11, 12], own=11) == 2
    assert sharing.others([11], own=11) == 0
    assert sharing.others([500, 501], own=11) == 1       # a container: host pids, ours not among them
    assert sharing.others([], own=11) == 0


def test_a_timing_carries_the_note_and_prints_it_and_replay_says_nothing():
    t = timing.Timing([1.0, 2.0], "graph", 10, "x", "shared GPU: 1 other process (1.0 GiB) -- timings unreliable")
    assert "[shared GPU: 1 other process" in t.summary()
    assert timing.Timing.from_dict(t.to_dict()).shared == t.shared and timing.Timing([1.0], "graph", 1, "", "").shared is None
    assert "shared" not in timing.Timing([1.0], "graph").to_dict()   # recordings made alone keep their keys
    ab = timing.ABBA(["A", "B"], [t, timing.Timing([1.0], "graph")])
    assert "measured on a shared GPU: shared GPU: 1 other process" in ab.table()
    if not mode.is_live():
        assert sharing.note() == ""


@live
@pytest.mark.gpu
def test_nvml_sees_another_process_holding_a_context():
    alone = sharing.now(refresh=True)
    assert not alone.error and alone.sms > 0
    code = "import cupy, time; cupy.zeros(1 << 20).sum(); print('up', flush=True); time.sleep(30)"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
        busy = sharing.now(refresh=True)
        assert busy.others >= alone.others + 1 and "other process" in busy.note()
    finally:
        p.kill()


def test_the_process_list_is_read_whichever_shape_nvml_gives_it():
    class Struct:
        def __init__(self, pid, used):
            self.pid, self.used_gpu_memory = pid, used
    import numpy as np
    arrays = Struct(np.array([10, 11]), np.array([2 ** 30, 0]))
    assert sharing._processes(arrays) == ([10, 11], [2 ** 30, 0])
    assert sharing._processes([Struct(10, 5), Struct(12, None)]) == ([10, 12], [5, 0])
    assert sharing._processes(Struct(7, 3)) == ([7], [3]) and sharing._processes(None) == ([], [])
