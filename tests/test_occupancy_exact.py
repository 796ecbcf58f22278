"""The occupancy calculator's every field and word, worked by hand from the H200's published limits (compute
capability 9.0: 64 warps, 32 blocks, 64 K registers in four 16 K sub-partitions allocated per warp in 256s,
228 KB shared memory in 128-byte units with 1 KB reserved per block), and the coverage arithmetic of §1."""
from dataclasses import replace

import numpy as np
import pytest

from launchlab.core import hardware, occupancy


def test_one_result_field_by_field():
    """256 threads = 8 warps; 32 registers x 32 lanes = 1,024 per warp, 8,192 per block; 8 warps per sub-
    partition of 16 K -> 64 warps -> 8 blocks; warps allow 64 / 8 = 8; 1 KB reserved -> 228 blocks by memory."""
    o = occupancy.occupancy(256, 32)
    assert o == occupancy.Occupancy(
        block=256, regs=32, smem=0, gpu="NVIDIA H200", blocks_per_sm=8,
        limits={"warps": 8, "registers": 8, "shared memory": 228, "block cap": 32}, limiter=("warps", "registers"),
        warps_per_block=8, warps_per_sm=64, max_warps_per_sm=64, sm_count=132, regs_per_block=8192,
        smem_per_block=1024)
    assert all(type(v) is int for v in o.limits.values())
    assert (o.fraction, o.blocks_per_wave, o.can_launch) == (1.0, 1056, True)


def test_no_registers_put_no_limit():
    o = occupancy.occupancy(32, 0, 0)                 # one warp: 64 by warps, 32 by the block cap
    assert o.limits["registers"] is None and o.blocks_per_sm == 32 and o.limiter == ("block cap",)


def test_the_register_edges():
    """256 registers (the calculator's ceiling) in a 1-warp block: 8,192 per warp, 2 warps per 16 K sub-
    partition -> 8 blocks; 257 cannot launch. 80 registers in 25 warps: 2,560 per warp fit 6 per sub-partition,
    24 warps per SM, fewer than one block's 25."""
    assert occupancy.occupancy(32, 256).blocks_per_sm == 8
    assert occupancy.occupancy(32, 257).blocks_per_sm == 0
    big = occupancy.occupancy(800, 80)
    assert big.blocks_per_sm == 0 and big.limiter == ("registers",) and not big.can_launch
    assert big.describe() == ("block 800, 80 regs/thread, 0 B smem: cannot launch (registers allow 0 blocks per "
                              "SM)")


def test_the_words():
    assert occupancy.occupancy(256, 32, 0).describe() == (
        "block 256, 32 regs/thread, 0 B smem: 8 blocks/SM (64/64 warps, 100% occupancy),\n  limited by warps and "
        "registers; 1056 blocks per wave on 132 SMs")
    assert occupancy.occupancy(2048, 32).describe() == (
        "block 2048, 32 regs/thread, 0 B smem: cannot launch (warps allow 0 blocks per SM)")     # 64 warps' 64 K
    # registers fit exactly; the block itself is over 1,024 threads


def test_shared_memory_rounds_to_128_bytes_after_the_reserved_kilobyte():
    o = occupancy.occupancy(64, 16, 9473)             # 9,473 + 1,024 -> 10,624 B; 233,472 // 10,624 = 21
    assert (o.smem_per_block, o.limits["shared memory"], o.blocks_per_sm) == (10624, 21, 21)
    assert occupancy.occupancy(64, 16, 227 * 1024).blocks_per_sm == 1
    assert occupancy.occupancy(64, 16, 227 * 1024 + 1).blocks_per_sm == 0


def test_integers_of_any_kind_and_nothing_else():
    assert occupancy.occupancy(np.int64(256), np.int32(32), np.int64(0)).blocks_per_sm == 8
    for name, kw in (("block", dict(block=1.5)), ("regs", dict(regs=True)), ("smem", dict(smem="0"))):
        with pytest.raises(TypeError) as e:
            occupancy.occupancy(**(dict(block=256, regs=32, smem=0) | kw))
        assert str(e.value) == f"{name} must be an integer, got {kw[name]!r}"
    for kw in (dict(regs=-1), dict(smem=-1)):
        with pytest.raises(ValueError) as e:
            occupancy.occupancy(**(dict(block=256, regs=32, smem=0) | kw))
        assert str(e.value) == "regs and smem cannot be negative"
    assert occupancy.occupancy(256, 0, 0).can_launch


def test_blocks_per_sm_reads_the_gpu_it_is_given():
    small = replace(hardware.H200, name="sixteen-block GPU", max_blocks_per_sm=16, sm_count=66)
    assert occupancy.blocks_per_sm(32, 16, gpu=small) == 16 and occupancy.blocks_per_sm(32, 16) == 32
    assert occupancy.occupancy(32, 16, gpu=small).describe().endswith("1056 blocks per wave on 66 SMs")


@pytest.mark.parametrize("grid, want", [
    (12, "120 of 132 SMs idle"), (132, "1 full wave"), (264, "2 full waves"), (133, "1 full wave + a tail wave 1% full"),
    (330, "2 full waves + a tail wave 50% full"), (1, "131 of 132 SMs idle")])
def test_the_coverage_verdict_word_for_word(grid, want):
    assert occupancy.coverage(grid).verdict() == want


def test_one_partial_wave_at_two_blocks_per_sm():
    assert occupancy.coverage(198, blocks_per_sm=2).verdict() == "one partial wave, 75% full"


@pytest.mark.parametrize("grid", [0, -1, True, 1.0, "12"])
def test_a_grid_that_is_not_a_positive_integer_is_refused(grid):
    with pytest.raises(ValueError) as e:
        occupancy.coverage(grid)
    assert str(e.value) == f"grid must be a positive integer, got {grid!r}"


def test_a_wave_of_no_blocks_is_refused():
    with pytest.raises(ValueError) as e:
        occupancy.coverage(12, blocks_per_sm=0)
    assert str(e.value) == "blocks_per_sm must be at least 1"


def test_two_limiters_at_zero_are_both_named():
    """2,048 threads with 33 registers: 64 warps x 1,280 registers = 81,920 > 64 K, and 64 warps > one SM's:
    both warps and registers allow no block."""
    assert occupancy.occupancy(2048, 33).describe() == (
        "block 2048, 33 regs/thread, 0 B smem: cannot launch (warps and registers allow 0 blocks per SM)")
