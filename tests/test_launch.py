"""Bad launch geometry is refused with a clear error before any launch."""
import numpy as np
import pytest

from launchlab.core import launch


@pytest.mark.parametrize("grid,block,smem,match", [
    (1, 0, 0, "at least one thread"),
    (1, 2048, 0, "block.x = 2048 exceeds"),
    (0, 128, 0, "at least one block"),
    (1, (32, 32, 2), 0, "2048 threads exceeds"),
    (1, (1, 1, 65), 0, "block.z = 65 exceeds"),
    ((1, 70000), 128, 0, "grid.y = 70000 exceeds"),
    (1, 128, 240 * 1024, "exceeds the NVIDIA H200 limit of 232448 bytes"),
    (1, 128, -1, "cannot be negative"),
    (1, 128.0, 0, "whole number"),
    (2.5, 128, 0, "whole number"),
    (1, True, 0, "whole number"),
    (1, "128", 0, "whole number"),
    (1, (1, 2, 3, 4), 0, "1 to 3 dimensions"),
])
def test_bad_geometry(grid, block, smem, match):
    with pytest.raises(launch.LaunchError, match=match):
        launch.check(grid, block, smem)


def test_static_plus_dynamic_smem_and_registers():
    with pytest.raises(launch.LaunchError, match="40000 static"):
        launch.check(1, 128, 200 * 1024, static_smem=40000)
    with pytest.raises(launch.LaunchError, match="registers"):
        launch.check(1, 1024, 0, regs=65)
    with pytest.raises(launch.LaunchError, match="this kernel's limit of 256"):
        launch.check(1, 512, 0, max_threads=256)


def test_good_geometry_normalized():
    g = launch.check(np.int64(12), (128,), 1024)
    assert g.grid == (12, 1, 1) and g.block == (128, 1, 1) and g.blocks == 12 and g.threads_per_block == 128
    assert launch.check(1, 1024, 227 * 1024).smem_per_block == 227 * 1024


@pytest.mark.gpu
def test_refused_launch_leaves_the_session_usable():
    from launchlab.kernels import stream_read
    sr = stream_read.StreamRead(nbytes=1 << 22)
    for bad in ((0, 128), (4, 0), (4, 2048), (4, 100.5)):
        with pytest.raises(launch.LaunchError):
            sr.launch(*bad)
    with pytest.raises(launch.LaunchError, match="misaligned view"):
        sr.launch(4, 128, sr.x[1:1025], vec=4, unroll=4)
    with pytest.raises(launch.LaunchError, match="divisible by 4"):
        sr.launch(4, 128, sr.x[:1022], vec=4, unroll=4)
    assert sr.check_reference(8, 256, 4, 4, n=1 << 16) < 1e-5
