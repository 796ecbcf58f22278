"""§4's exercises."""
from __future__ import annotations

from launchlab.core import hardware
from launchlab.core.exercise import Exercise, register
from launchlab.kernels import mla, splits
from launchlab.sections.s04_derive import turn
from launchlab.core import transfer

# ------------------------------------------------------------------ §4 derive the constant
register(Exercise(
    "04.splits_for_shape", "the derived split count at ctx 65,536, tp = 4 (32 heads), batch 1, kMlaBlocksPerSm = 2",
    lambda: splits.split(65_536, 32, 1).splits,
    lambda: (lambda s: f"32 heads are {s.head_tiles} head tiles of 16, so the target of 2 x 132 = 264 blocks asks "
                       f"for ceil(264 / {s.head_tiles}) = {-(-264 // s.head_tiles)} splits per tile; 65,536 / "
                       f"{-(-264 // s.head_tiles)} = {65_536 / -(-264 // s.head_tiles):.1f} tokens, rounded up to "
                       f"whole 64-token tiles: a slice of {s.slice_tokens}, so {s.splits} splits and a grid of "
                       f"{s.grid} blocks.")(splits.split(65_536, 32, 1)),
    hint="the target is kMlaBlocksPerSm x 132 blocks, shared among the head tiles of 16 heads; round the slice up to "
         "whole 64-token tiles and count the slices that cover the context."))

register(Exercise(
    "04.grid_at_ctx", "the derived grid (blocks) at ctx 20,000, tp = 8 (16 heads), batch 1",
    lambda: splits.split(20_000, 16, 1).grid,
    lambda: (lambda s: f"264 splits wanted; 20,000 / 264 = 75.8 tokens, rounded up to one 64-token tile is not "
                       f"enough -- two tiles, a slice of {s.slice_tokens} -- so ceil(20,000 / {s.slice_tokens}) = "
                       f"{s.splits} splits: {s.grid} blocks, {s.share_of_target:.0%} of the target. Whole tiles "
                       f"cost grid at short contexts.")(splits.split(20_000, 16, 1)),
    hint="16 heads are one head tile, so the grid is the split count: divide the context by 264, round the slice up "
         "to whole 64-token tiles, then count the slices that cover 20,000 tokens."))


# ------------------------------------------------------------------ the your-turn launch (turn.py)
def _median_at(splits_: int) -> float:
    s, _, _ = turn.TURN.check((splits_, 1, 1), 128)
    return turn.recorded().at(s).timing.median


register(Exercise(
    "04.turn_speedup_264", "the H200's time of the MLA decode at 128 splits divided by its time at 264 splits "
                           "(cold, 16 heads, 131,072 tokens)",
    lambda: _median_at(128) / _median_at(264),
    lambda: f"Recorded cold on the H200: {_median_at(128):.1f} µs at 128 splits, {_median_at(264):.1f} µs at 264, a "
            f"ratio of {_median_at(128) / _median_at(264):.2f}. 128 blocks leave 4 SMs idle and one block per SM; "
            f"264 give every SM two, which is what this kernel's residency allows, so each SM keeps two blocks' "
            f"loads in flight.",
    to=0.01, within_pct=5,
    hint="launch at 128 and at 264 splits in the cell above and divide the first time by the second."))


def _a100_why(sp, plan) -> str:
    a100 = hardware.spec("A100")
    return (f"The rule multiplies kMlaBlocksPerSm = {sp.blocks_per_sm} by the SM count it runs on: a target of "
            f"{sp.blocks_per_sm} x {sp.sm_count} = {sp.blocks_per_sm * sp.sm_count} blocks, a slice of "
            f"{sp.slice_tokens} tokens (whole 64-token tiles), {sp.splits} splits. But the split kernel asks "
            f"{plan.smem:,} B of shared memory, and the A100's {a100.smem_per_sm:,} B per SM hold "
            f"{plan.occupancy.blocks_per_sm} such block (the H200's {hardware.spec('H200').smem_per_sm:,} B hold two): the rule's own target is "
            f"unreachable there, and {sp.splits} blocks run as {sp.sm_count} then {sp.splits - sp.sm_count}, a "
            f"partial second wave. The SM count was derived; the 2 was the H200's residency, pinned. Derive it too "
            f"(the calculator's {plan.occupancy.blocks_per_sm} here) and the target is one full wave of "
            f"{plan.occupancy.blocks_per_sm * sp.sm_count}.")


transfer.mark(register(Exercise(
    "04.transfer_a100_splits", "the derived split count for one request of 16 heads over 131,072 tokens on an A100 "
                               "(108 SMs)",
    lambda: splits.split(131_072, 16, 1, "derived", "A100").splits,
    lambda: _a100_why(splits.split(131_072, 16, 1, "derived", "A100"), mla.plan(1, 16, 131_072, "derived", "off",
                                                                                 gpu="A100")),
    hint="the derivation multiplies kMlaBlocksPerSm by the SM count it runs on: 108 on an A100, not 132; then the "
         "slice rounds up to whole 64-token tiles.")), "an A100: 108 SMs")
