"""§4's exercises."""
from __future__ import annotations

from launchlab.core.exercise import Exercise, register
from launchlab.kernels import splits

# ------------------------------------------------------------------ §4 derive the constant
register(Exercise(
    "04.splits_for_shape", "the derived split count at ctx 65,536, tp = 4 (32 heads), batch 1, kMlaBlocksPerSm = 2",
    lambda: splits.split(65_536, 32, 1).splits,
    lambda: (lambda s: f"32 heads are {s.head_tiles} head tiles of 16, so the target of 2 x 132 = 264 blocks asks "
                       f"for ceil(264 / {s.head_tiles}) = {-(-264 // s.head_tiles)} splits per tile; 65,536 / "
                       f"{-(-264 // s.head_tiles)} = {65_536 / -(-264 // s.head_tiles):.1f} tokens, rounded up to "
                       f"whole 64-token tiles: a slice of {s.slice_tokens}, so {s.splits} splits and a grid of "
                       f"{s.grid} blocks.")(splits.split(65_536, 32, 1))))

register(Exercise(
    "04.grid_at_ctx", "the derived grid (blocks) at ctx 20,000, tp = 8 (16 heads), batch 1",
    lambda: splits.split(20_000, 16, 1).grid,
    lambda: (lambda s: f"264 splits wanted; 20,000 / 264 = 75.8 tokens, rounded up to one 64-token tile is not "
                       f"enough -- two tiles, a slice of {s.slice_tokens} -- so ceil(20,000 / {s.slice_tokens}) = "
                       f"{s.splits} splits: {s.grid} blocks, {s.share_of_target:.0%} of the target. Whole tiles "
                       f"cost grid at short contexts.")(splits.split(20_000, 16, 1))))
