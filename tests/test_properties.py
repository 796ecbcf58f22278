"""Properties where a hand-picked case cannot cover the space (Hypothesis draws the cases, and shrinks a failure
to the smallest one): the MLA split count over batch x heads x context, the occupancy calculator against the
H200's published per-SM limits (NVIDIA's compute capability 9.0 table: 2,048 threads, 32 blocks, 64 K
registers allocated per warp in units of 256 from four 16 K sub-partitions, 228 KB shared memory in 128-byte
units with 1 KB reserved per block, 227 KB per block), and the launch checks against the same table."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launchlab.core import hardware, occupancy
from launchlab.kernels import splits

H200 = hardware.spec("H200")
SETTINGS = settings(max_examples=300, deadline=None)
TILE = 64


def ceil_div(a, b):
    return -(-a // b)


@SETTINGS
@given(ctx=st.integers(splits.SPLIT_MIN_CTX + 1, 4_000_000), heads=st.integers(1, 128), batch=st.integers(1, 64))
def test_the_derived_split_count(ctx, heads, batch):
    """Past SPLIT_MIN_CTX: slices of whole 64-token tiles that cover the context with a non-empty tail; at most
    ceil(target / (batch x head tiles)) splits per request and head tile, so the grid exceeds the 264-block
    target by less than one block per (request, head tile); and the slice is the shortest whole-tile one that
    keeps to that count (a tile shorter would need more splits)."""
    s = splits.split(ctx, heads, batch)
    tiles = ceil_div(heads, 16)
    want = ceil_div(2 * H200.sm_count, batch * tiles)
    assert s.slice_tokens % TILE == 0
    assert (s.splits - 1) * s.slice_tokens < ctx <= s.splits * s.slice_tokens      # the tail slice is not empty
    assert s.splits <= min(want, splits.MAX_SPLITS)
    assert s.grid < s.target_blocks + batch * tiles
    shorter = s.slice_tokens - TILE
    if shorter > 0 and ceil_div(ctx, want) <= s.slice_tokens:                       # not widened by the cap
        assert ceil_div(ctx, shorter) > want


@SETTINGS
@given(ctx=st.integers(1, splits.SPLIT_MIN_CTX), heads=st.integers(1, 128), batch=st.integers(1, 64),
       mode=st.sampled_from(splits.MODES))
def test_no_split_at_or_below_the_minimum_context(ctx, heads, batch, mode):
    s = splits.split(ctx, heads, batch, mode)
    assert (s.splits, s.slice_tokens) == (1, ctx)


@SETTINGS
@given(ctx=st.integers(splits.SPLIT_MIN_CTX + 1, 4_000_000), heads=st.integers(1, 128))
def test_the_hardcoded_floor_is_a_fixed_slice_whatever_the_batch(ctx, heads):
    a, b = splits.split(ctx, heads, 1, "hardcoded"), splits.split(ctx, heads, 7, "hardcoded")
    assert a.slice_tokens == b.slice_tokens and a.splits == b.splits == ceil_div(ctx, a.slice_tokens)


@SETTINGS
@given(block=st.integers(1, 1024), regs=st.integers(1, 255), smem=st.integers(0, 227 * 1024))
def test_the_occupancy_calculator_keeps_within_every_published_limit(block, regs, smem):
    o = occupancy.occupancy(block, regs, smem)
    warps = ceil_div(block, 32)
    regs_per_warp = ceil_div(regs * 32, 256) * 256                        # allocated per warp in 256s
    smem_alloc = ceil_div(smem + 1024, 128) * 128                         # 1 KB reserved, 128-byte units
    assert o.blocks_per_sm <= 32
    assert o.blocks_per_sm * warps <= 64                                  # 2,048 threads = 64 warps
    assert o.blocks_per_sm * warps * regs_per_warp <= 65536
    assert o.blocks_per_sm * smem_alloc <= 228 * 1024
    assert o.limits[o.limiter[0]] == o.blocks_per_sm == min(o.limits.values())
    # one more block would break the limiter's own limit
    n = o.blocks_per_sm + 1
    broken = {"warps": n * warps > 64,
              # registers live in 4 sub-partitions of 16 K; a warp's registers come from one of them
              "registers": ceil_div(n * warps, 4) * regs_per_warp > 65536 // 4,
              "shared memory": n * smem_alloc > 228 * 1024, "block cap": n > 32}
    assert all(broken[name] for name in o.limiter)


@SETTINGS
@given(block=st.integers(1, 1024), regs=st.integers(1, 254), smem=st.integers(0, 226 * 1024),
       more=st.sampled_from(["block", "regs", "smem"]))
def test_more_of_any_resource_never_raises_residency(block, regs, smem, more):
    o = occupancy.occupancy(block, regs, smem)
    bigger = dict(block=block, regs=regs, smem=smem)
    bigger[more] = min(bigger[more] + {"block": 32, "regs": 1, "smem": 1024}[more],
                       {"block": 1024, "regs": 255, "smem": 227 * 1024}[more])
    assert occupancy.occupancy(**bigger).blocks_per_sm <= o.blocks_per_sm


@SETTINGS
@given(block=st.integers(-5, 0))
def test_a_block_of_no_threads_is_refused(block):
    with pytest.raises(ValueError, match="at least 1 thread"):
        occupancy.occupancy(block, 32, 0)


@SETTINGS
@given(block=st.integers(1025, 5000), regs=st.integers(1, 255))
def test_a_block_over_1024_threads_cannot_launch(block, regs):
    """The calculator answers (0 blocks, warps the limiter) where the launcher refuses before any launch."""
    o = occupancy.occupancy(block, regs, 0)
    assert o.blocks_per_sm == 0 and not o.can_launch and "warps" in o.limiter


@SETTINGS
@given(grid=st.integers(1, 100_000))
def test_coverage_counts_every_block_once(grid):
    c = occupancy.coverage(grid)
    assert c.sms_with_work == min(grid, 132)
    assert c.full_waves * c.blocks_per_wave + c.tail_blocks == grid
    assert 0 <= c.tail_blocks < c.blocks_per_wave


# ------------------------------------------------------------------ launch checks (launch.check)
grid_dims = st.lists(st.integers(-1, 70000) | st.sampled_from([2**31 - 1, 2**31, 65535, 65536]), min_size=1,
                     max_size=3)
block_dims = st.lists(st.integers(-1, 1100) | st.sampled_from([1, 32, 64, 65, 1024, 1025]), min_size=1, max_size=3)


@settings(max_examples=500, deadline=None)
@given(grid=grid_dims, block=block_dims, smem=st.integers(-10, 240_000) | st.sampled_from([232448, 232449]),
       regs=st.none() | st.integers(1, 300))
def test_a_launch_is_accepted_exactly_when_every_published_limit_holds(grid, block, smem, regs):
    """The H200's limits, written here from NVIDIA's table for compute capability 9.0: grid 2^31-1 x 65,535 x
    65,535; block 1,024 x 1,024 x 64 and 1,024 threads; 232,448 B of shared memory per block; at most 255
    registers per thread and 65,536 per block (allocated per warp in units of 256)."""
    from launchlab.core import launch
    g = grid + [1] * (3 - len(grid))
    b = block + [1] * (3 - len(block))
    threads = b[0] * b[1] * b[2]
    warps = -(-threads // 32)
    ok = (all(v >= 1 for v in g + b) and g[0] <= 2**31 - 1 and g[1] <= 65535 and g[2] <= 65535
          and b[0] <= 1024 and b[1] <= 1024 and b[2] <= 64 and threads <= 1024 and 0 <= smem <= 232448
          and (regs is None or (regs <= 255 and -(-regs * 32 // 256) * 256 * warps <= 65536)))
    try:
        geo = launch.check(grid, block, smem, regs=regs)
    except launch.LaunchError:
        assert not ok
    else:
        assert ok and geo.grid == tuple(g) and geo.block == tuple(b) and geo.threads_per_block == threads
