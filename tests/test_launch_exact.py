"""launch.check word for word, on both sides of every H200 limit (issue 27: mutation testing).

The limits are NVIDIA's published ones for compute capability 9.0 (the CUDA C++ Programming Guide's table of
technical specifications): grid 2^31-1 x 65,535 x 65,535; block 1,024 x 1,024 x 64 and 1,024 threads; 227 KiB
(232,448 B) of shared memory per block with opt-in, 1 KiB reserved; 65,536 registers per block, at most 255 per
thread, allocated per warp in units of 256."""
from types import SimpleNamespace

import numpy as np
import pytest

from launchlab.core import launch
from launchlab.core.launch import LaunchError, check


def refused(*args, **kw) -> str:
    with pytest.raises(LaunchError) as e:
        check(*args, **kw)
    return str(e.value)


def test_defaults_and_the_largest_legal_launch():
    g = check(1, 32)
    assert (g.grid, g.block, g.dynamic_smem, g.static_smem) == ((1, 1, 1), (32, 1, 1), 0, 0)
    g = check((2 ** 31 - 1, 65535, 65535), (1024, 1, 1), 232448)          # every grid limit, exactly
    assert g.blocks == (2 ** 31 - 1) * 65535 * 65535 and g.threads_per_block == 1024
    assert check(1, (1, 1, 64)).block == (1, 1, 64) and check(1, (16, 64)).block == (16, 64, 1)
    assert check(1, (1, 1024)).block == (1, 1024, 1) and check(1, 1024, max_threads=1024).block[0] == 1024
    assert check(1, 32, 1000, static_smem=231448).smem_per_block == 232448


@pytest.mark.parametrize("args, kw, message", [
    (("3", 32), {}, "grid must be a whole number, got '3' (str)"),
    (((1, 2.0), 32), {}, "grid[1] must be a whole number, got 2.0 (float)"),
    ((1, True), {}, "block must be a whole number, got True (bool)"),
    ((1, (32, None)), {}, "block[1] must be a whole number, got None (NoneType)"),
    ((1, 32, 1.5), {}, "dynamic shared memory must be a whole number, got 1.5 (float)"),
    ((1, 32), {"static_smem": "0"}, "static shared memory must be a whole number, got '0' (str)"),
    ((1, 32), {"regs": 32.0}, "registers per thread must be a whole number, got 32.0 (float)"),
    (((), 32), {}, "grid must have 1 to 3 dimensions, got 0"),
    ((1, (1, 1, 1, 1)), {}, "block must have 1 to 3 dimensions, got 4"),
    ((0, 32), {}, "grid.x = 0: a grid needs at least one block on every axis"),
    (((1, 1, 0), 32), {}, "grid.z = 0: a grid needs at least one block on every axis"),
    ((2 ** 31, 32), {}, "grid.x = 2147483648 exceeds the NVIDIA H200 limit of 2147483647"),
    (((1, 65536), 32), {}, "grid.y = 65536 exceeds the NVIDIA H200 limit of 65535"),
    ((1, 0), {}, "block.x = 0: a block needs at least one thread on every axis"),
    ((1, (1, 0)), {}, "block.y = 0: a block needs at least one thread on every axis"),
    ((1, (1, 1, 65)), {}, "block.z = 65 exceeds the NVIDIA H200 limit of 64"),
    ((1, 2048), {}, "block.x = 2048 exceeds the NVIDIA H200 limit of 1024"),
    ((1, (32, 33)), {}, "a block of 1056 threads exceeds the NVIDIA H200 limit of 1024 threads per block"),
    ((1, 257), {"max_threads": 256}, "a block of 257 threads exceeds this kernel's limit of 256 (set by its "
                                     "register use or __launch_bounds__)"),
    ((1, 32, -1), {}, "dynamic shared memory cannot be negative (-1 bytes)"),
    ((1, 32, 232000), {"static_smem": 1000},
     "233000 bytes of shared memory per block (1000 static + 232000 dynamic) exceeds the NVIDIA H200 limit of "
     "232448 bytes (227 KiB with opt-in; the runtime reserves another 1024 B per block)"),
    # registers: a warp of 65 registers/thread holds 2,080 -> 2,304 (units of 256); 1,000 threads are 32 warps
    ((1, 1000), {"regs": 65}, "a block of 1000 threads at 65 registers per thread needs 73728 registers; a block "
                              "may use at most 65536"),
    # 257 registers: 8,224 per warp -> 8,448; refused whatever the block (at most 255 per thread)
    ((1, 32), {"regs": 257}, "a block of 32 threads at 257 registers per thread needs 8448 registers; a block may "
                             "use at most 65536"),
    ((1, 32), {"regs": 256}, "a block of 32 threads at 256 registers per thread needs 8192 registers; a block may "
                             "use at most 65536"),
])
def test_each_refusal_word_for_word(args, kw, message):
    assert refused(*args, **kw) == message


def test_registers_on_both_sides_of_each_edge():
    assert check(1, 32, regs=255).block == (32, 1, 1)                  # 255 per thread: allowed
    assert check(1, 1024, regs=64).block == (1024, 1, 1)               # 32 warps x 2,048 = 65,536 exactly
    assert check(1, 1024, regs=63).block == (1024, 1, 1)               # 2,016 -> 2,048 per warp: 65,536
    assert "needs 73728" in refused(1, 1024, regs=65)
    assert check(1, 993, regs=64).block == (993, 1, 1)                 # 993 threads are 32 warps too


def test_addresses_and_16_byte_alignment():
    a = np.zeros(64, np.float32)
    base = launch.address(a)
    assert base == a.ctypes.data and launch.address(a[3:]) == base + 12
    assert launch.address(SimpleNamespace(data=SimpleNamespace(ptr=4096))) == 4096        # a device array
    assert launch.address(SimpleNamespace(ctypes=SimpleNamespace(data=48))) == 48          # no .data at all
    aligned = a[(-base % 16) // 4:]
    assert launch.aligned16(aligned) and launch.aligned16(aligned, aligned[4:], aligned[8:])
    assert not launch.aligned16(aligned[1:]) and not launch.aligned16(aligned, aligned[1:])
    assert not launch.aligned16(aligned[2:]) and not launch.aligned16(aligned[3:])
    assert launch.aligned16(SimpleNamespace(data=SimpleNamespace(ptr=80)))                 # a multiple of 16, not of 17
    assert launch.aligned16()                                                                 # nothing to misalign
