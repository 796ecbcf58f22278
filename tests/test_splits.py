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


def test_other_libraries_rules_at_a_second_shape_worked_by_hand():
    """ctx 20,000, 128 heads (8 head tiles, 2 FlashMLA/FA2 64-row groups), batch 3 on 132 SMs."""
    got = {r.system: r.blocks for r in splits.rules(20_000, 128, 3)}
    assert got == {
        "this course, derived": 11,          # ceil(264 / (3 x 8)) = 11; 20,000 / 11 -> 1,856 tokens; 11 slices
        "main, hardcoded": 20,               # ceil(20,000 / 1,024)
        "FlashMLA": 66,                      # 132 SMs // 2 groups
        "PyTorch flex decoding": 88,         # 132 // 3 x 2
        "sglang Triton MLA": 256,            # min(next pow2 of 132, next pow2 of 625)
        "sglang, deterministic mode": 79,    # ceil(20,000 / 256)
        "FlashAttention-2": 35,
        "FlashInfer MLA plan": 40,           # 60,000 / 132 = 455 -> 512-token chunks; ceil(20,000 / 512)
        "vLLM TRITON_MLA": 4}
    assert [r.system for r in splits.rules(131072)] == list(got)


def test_the_rules_read_as_their_sources_say():
    """The rules' words and sources as the notebook prints them (a changed word is a changed claim)."""
    import ast
    from pathlib import Path
    want = [ast.literal_eval(line) for line in
            (Path(__file__).parent / "data" / "split_rules.txt").read_text().splitlines() if line.strip()]
    assert [(r.system, r.rule, r.source) for r in splits.rules(131072)] == want


def test_fa2_s_heuristic_by_hand():
    """Work of 212 blocks on 264 slots is 80.3 % (no split); 211 is 79.9 %. One work block, 2,048 KV blocks: every
    count is under a wave, so efficiency is n / 264, best at 128 (the cap); 85 % of it needs n >= 109, and the
    first count from 109 up that changes the KV blocks per split (19 -> 18) is 114. Three work blocks, 5 KV
    blocks: counts 1, 2, 3, 5 change the blocks per split; 5 is the best and the only one within 85 %."""
    assert splits.fa2_splits(212, 264, 2048) == 1 and splits.fa2_splits(211, 264, 2048) > 1
    assert splits.fa2_splits(1, 264, 2048) == 114
    assert splits.fa2_splits(3, 264, 5) == 5
    # capped at 64 the best is 64: 85 % needs n >= 54.4, and the first count from 55 up that changes the KV
    # blocks per split (38 -> 37) is 56
    assert splits.fa2_splits(1, 264, 2048, max_splits=64) == 56


def test_flashinfer_s_chunk_limit_on_both_sides_of_each_step():
    """total KV / 132 clusters, rounded up to 32, 64, 128, 192, then to a multiple of 256."""
    cases = {132 * 32: 32, 132 * 32 + 1: 64, 132 * 64: 64, 132 * 64 + 1: 128, 132 * 128: 128,
             132 * 128 + 1: 192, 132 * 192: 192, 132 * 192 + 1: 256, 132 * 256 + 1: 512, 131072: 1024}
    assert {t: splits._flashinfer_limit(t, 132) for t in cases} == cases
    assert [splits._next_pow2(n) for n in (0, 1, 2, 3, 132, 256, 257)] == [1, 1, 2, 4, 256, 256, 512]


def test_a_forced_split_count_or_slice():
    """A count: slices of ceil(ctx / S) tokens (not whole tiles); a slice: ceil(ctx / slice) splits whatever the
    batch; both keep the shape they were given."""
    s = splits.forced(131072, 16, 1, splits=255)
    assert (s.mode, s.ctx, s.n_head, s.batch, s.slice_tokens, s.splits) == ("fixed-splits", 131072, 16, 1, 515, 255)
    assert (s.sm_count, s.blocks_per_sm, s.grid) == (132, 2, 255)
    f = splits.forced(131072, 32, 2, slice_tokens=512)
    assert (f.mode, f.n_head, f.batch, f.slice_tokens, f.splits, f.grid) == ("fixed-slice", 32, 2, 512, 256, 1024)
    d = splits.forced(1000, splits=2)
    assert (d.n_head, d.batch, d.sm_count) == (16, 1, 132)
    assert splits.forced(1000, splits=1000).slice_tokens == 1 and splits.forced(1000, splits=999).slice_tokens == 2
    assert splits.forced(1024 * 3, slice_tokens=3).splits == 1024                        # exactly the cap


@pytest.mark.parametrize("kw, message", [
    (dict(splits=4, slice_tokens=64), "give exactly one of splits= or slice_tokens="),
    (dict(), "give exactly one of splits= or slice_tokens="),
    (dict(splits=1001), "1001 splits of a 1000-token context would leave splits empty"),
    (dict(splits=0), "splits must be a positive integer, got 0"),
    (dict(slice_tokens=0), "slice_tokens must be a positive integer, got 0"),
])
def test_a_forced_split_is_refused_with_its_reason(kw, message):
    with pytest.raises(splits.SplitError) as e:
        splits.forced(1000, **kw)
    assert str(e.value) == message


def test_a_forced_split_past_the_cap_names_the_slice_to_use():
    with pytest.raises(splits.SplitError) as e:
        splits.forced(1024 * 3 + 1, slice_tokens=3)
    assert str(e.value) == ("1025 splits is beyond the cap of 1024 (the combine's scratch and weight table are sized "
                            "for it): use a slice of at least 4 tokens")
    for name, kw in (("ctx", dict(ctx=0)), ("n_head", dict(n_head=0)), ("batch", dict(batch=0))):
        with pytest.raises(splits.SplitError) as e:
            splits.forced(**(dict(ctx=1000, splits=2) | kw))
        assert str(e.value) == f"{name} must be a positive integer, got 0"


def test_fa2_s_edges_worked_by_hand():
    assert splits.fa2_splits(4, 5, 10) == 1                  # work exactly 0.8 x slots: no split
    assert splits.fa2_splits(7, 10, 2) == 1                  # counts 1 and 2 both reach 70 %: the smaller
    assert splits.fa2_splits(0, 264, 10) == 1                # no work: no division by zero, no split
    # cap 63 (eligible: 33 KV blocks per split at 63 vs 34 at 62): 85 % of 63 needs 53.6 -> 54 (38 vs 39 per split)
    assert splits.fa2_splits(1, 264, 2048, max_splits=63) == 54
    # 2,064 KV blocks: FA2's own cap of 128 leaves 122 the best eligible count (17 per split vs 18 at 121) and
    # 104 the first within 85 %; a cap of 129 would admit 129 (16 exactly) and move the answer to 115
    assert splits.fa2_splits(1, 264, 2064) == 104 and splits.fa2_splits(1, 264, 2064, max_splits=129) == 115
    # 100 slots cap the count at 100: best eligible 98 (21 per split vs 22 at 97), 85 % -> 83.3, first eligible 86
    assert splits.fa2_splits(1, 100, 2048) == 86
    # 3 slots cap the count at 3 (of 4 KV blocks): counts 1 and 2 reach 2/3, 3 changes nothing (2 per split):
    # 1. Without the slots' cap, 4 (8/3 waves = 89 %) would be chosen
    assert splits.fa2_splits(2, 3, 4) == 1
    # 17 work blocks on 30 slots, 30 KV blocks: the best is 30 (17 waves, 100 %); 3 splits make 1.7 waves, 85 %
    # of two, exactly the 85 % FA2 accepts ("at least"): 3
    assert splits.fa2_splits(17, 30, 30) == 3


def test_the_rules_at_shapes_that_tell_their_roundings_apart():
    """ctx 20,000 with 65 heads: 5 head tiles of 16 (ceil(264 / 5) = 53 splits of 384 tokens), 2 FlashMLA/FA2
    groups of 64 rows (FlashMLA 132 // 2; FA2 asked with 2 work blocks and ceil(20,000 / 64) = 313 KV blocks).
    ctx 2,080 = 65 x 32: sglang's next power of two of 65 is 128. Batch 200 with 8,449 heads leaves fewer SMs
    than groups: FlashMLA and flex decoding fall back to one block. Every count is an int."""
    got = {r.system: r.blocks for r in splits.rules(20_000, 65, 1)}
    assert got["this course, derived"] == 53 and got["FlashMLA"] == 66
    assert got["FlashAttention-2"] == splits.fa2_splits(2, 264, 313)
    assert {r.system: r.blocks for r in splits.rules(2080)}["sglang Triton MLA"] == 128
    # 129 heads are 3 groups of 64 rows for FA2 (ceil, in integers): asked with 3 work blocks, not 2
    assert {r.system: r.blocks for r in splits.rules(20_000, 129, 1)}["FlashAttention-2"] == \
        splits.fa2_splits(3, 264, 313) == 79
    few = {r.system: r.blocks for r in splits.rules(20_000, 8449, 200)}
    assert few["FlashMLA"] == 1 and few["PyTorch flex decoding"] == 1
    assert all(type(r.blocks) is int for shape in ((131072,), (20_000, 65, 1), (2080,)) for r in splits.rules(*shape))


def test_the_cap_by_hand():
    """2^24 tokens at the flat 1,024: 16,384 splits, over the cap of 1,024, so the slice widens to 16,384 tokens
    (exactly 1,024 splits); one token more needs ceil(16,385) -> 16,448-token slices, 1,021 of them."""
    a, b = splits.split(1 << 24, mode="hardcoded"), splits.split((1 << 24) + 1, mode="hardcoded")
    assert (a.slice_tokens, a.splits, a.mode, a.ctx) == (16384, 1024, "hardcoded", 1 << 24)
    assert (b.slice_tokens, b.splits) == (16448, 1021)
    assert type(b.slice_tokens) is int and type(b.splits) is int


@pytest.mark.parametrize("kw, message", [
    (dict(ctx=0), "ctx must be a positive integer, got 0"),
    (dict(n_head=0), "n_head must be a positive integer, got 0"),
    (dict(batch=True), "batch must be a positive integer, got True"),
    (dict(blocks_per_sm=0), "blocks_per_sm must be a positive integer, got 0"),
    (dict(mode="flat"), "mode must be one of derived, hardcoded, got 'flat'"),
])
def test_each_refusal_names_what_it_refused(kw, message):
    with pytest.raises(splits.SplitError) as e:
        splits.split(**(dict(ctx=131072) | kw))
    assert str(e.value) == message


def test_a_split_keeps_the_shape_it_was_asked():
    s = splits.split(100_003, 48, 3)
    assert (s.mode, s.ctx, s.n_head, s.batch, s.sm_count, s.blocks_per_sm) == ("derived", 100_003, 48, 3, 132, 2)


def test_a_split_in_words_two_lines_under_the_page_width():
    """Word for word (worked out by hand: 131,072 / 128 = 1,024-token slices; 128 / 264 = 48 %; 256 / 264 = 97 %)."""
    assert splits.split(131_072, 16, 1, "hardcoded").describe() == (
        "hardcoded: ctx 131,072, 16 heads (1 tile(s)), batch 1 -> slice 1024 tokens, 128 splits,\n"
        "           grid 128 blocks = 48% of 2 x 132 SMs")
    assert splits.split(131_072, 16, 1, "derived").describe() == (
        "derived: ctx 131,072, 16 heads (1 tile(s)), batch 1 -> slice 512 tokens, 256 splits,\n"
        "         grid 256 blocks = 97% of 2 x 132 SMs")
