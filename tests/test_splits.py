"""§4: the split count is derived from the shape and a named target (arithmetic; any machine)."""
import pytest

from launchlab.kernels import splits


def test_the_lectures_grid_at_131072():
    d, h = splits.split(131072), splits.split(131072, mode="hardcoded")
    assert (h.slice_tokens, h.splits, h.grid) == (1024, 128, 128)          # main: 128 blocks on 132 SMs
    assert (d.slice_tokens, d.splits, d.grid) == (512, 256, 256)           # derived: 256, "two per SM"
    assert d.target_blocks == 264 and d.share_of_target == pytest.approx(256 / 264)


@pytest.mark.parametrize("tp, heads, hard_grid, derived_grid", [(1, 128, 1024, 264), (2, 64, 512, 256),
                                                                (4, 32, 256, 256), (8, 16, 128, 256)])
def test_sharding_strands_only_the_pinned_floor(tp, heads, hard_grid, derived_grid):
    assert splits.split(131072, heads, mode="hardcoded").grid == hard_grid
    assert splits.split(131072, heads).grid == derived_grid     # within 3 % of 264, every tp


def test_no_split_at_or_below_the_minimum_context_so_both_arms_agree():
    for ctx in (1, 100, 4096, splits.SPLIT_MIN_CTX):
        d, h = splits.split(ctx), splits.split(ctx, mode="hardcoded")
        assert d.splits == h.splits == 1 and d.slice_tokens == h.slice_tokens == ctx
    assert splits.split(splits.SPLIT_MIN_CTX + 64).splits > 1


def test_slices_are_whole_tiles_and_cover_a_ragged_context():
    s = splits.split(100_003)
    assert s.slice_tokens % splits.TILE_TOKENS == 0
    assert (s.splits - 1) * s.slice_tokens < 100_003 <= s.splits * s.slice_tokens   # the last slice is a tail


def test_batch_shares_the_target():
    assert splits.split(131072, batch=2).grid == 2 * splits.split(131072, batch=2).splits
    assert splits.split(131072, batch=2).grid <= 264 + 2 * 1


def test_the_cap_widens_the_slice_instead_of_growing_the_scratch():
    s = splits.split(1 << 24, mode="hardcoded")
    assert s.splits <= splits.MAX_SPLITS and s.slice_tokens % splits.TILE_TOKENS == 0
    assert s.splits * s.slice_tokens >= 1 << 24


@pytest.mark.parametrize("bad", [dict(ctx=0), dict(ctx=-5), dict(ctx=1.5), dict(n_head=0), dict(batch=True),
                                 dict(mode="flat"), dict(blocks_per_sm=0)])
def test_bad_shapes_are_refused_with_a_reason(bad):
    kw = dict(ctx=131072) | bad
    with pytest.raises(splits.SplitError):
        splits.split(**kw)


def test_other_libraries_rules_at_the_lectures_shape():
    got = {r.system: r.blocks for r in splits.rules(131072)}
    assert got["this course, derived"] == 256 and got["main, hardcoded"] == 128
    assert got["PyTorch flex decoding"] == 264 and got["sglang Triton MLA"] == 256
    assert got["sglang, deterministic mode"] == 512 and got["vLLM TRITON_MLA"] == 4
    assert got["FlashMLA"] == 132
