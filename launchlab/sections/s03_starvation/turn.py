"""§3's your-turn launch: one KDA decode step (kernels/kda_decode.cu, the tuned body, the elision gate's mode) at
the grid and block the learner writes.

The block sets the value tile: a warp carries 4 value columns, so a block of b threads covers BV = b / 8
columns, and grid = (V / BV, n_head) -- grid.x tiles of the 128 value columns, grid.y the heads of this rank.
The learner writes both; a grid whose tiles do not cover the 128 columns is refused before the launch. Timed
cold, as §3 compares it with its bytes floor: a CUDA graph cycling through copies of the state that add up to
three L2s (timing.graph_cold).
"""
from __future__ import annotations

from launchlab.core import launch, yourturn
from launchlab.kernels import kda_decode
from launchlab.kernels.kda_decode import COLS_PER_WARP, V

HEADS = (12, 24, 48, 96)              # the lecture's 96 KDA heads at tp = 8, 4, 2, 1
MAX_HEADS = 128
BLOCKS = (32, 64, 128, 256, 512, 1024)


def _plan(s: yourturn.Shape) -> kda_decode.Plan:
    return kda_decode.plan(s.grid[1], V, s.threads // 32 * COLS_PER_WARP, None, "tuned")


def rules(s: yourturn.Shape) -> None:
    if s.block[1:] != (1, 1) or s.grid[2] != 1:
        raise launch.LaunchError(f"the step reads a 1-D block and a 2-D grid (value tiles, heads): got grid {s.grid}, "
                                 f"block {s.block}")
    if s.smem:
        raise launch.LaunchError("the KDA step's shared memory is static: leave smem at 0")
    if s.threads % 32:
        raise launch.LaunchError(f"a block of {s.threads} threads is not whole warps: each warp carries "
                                 f"{COLS_PER_WARP} value columns")
    if not 1 <= s.grid[1] <= MAX_HEADS:
        raise launch.LaunchError(f"grid.y is the head count of this rank: 1 to {MAX_HEADS}, got {s.grid[1]}")
    bv = s.threads // 32 * COLS_PER_WARP
    if s.grid[0] * bv != V:
        raise launch.LaunchError(
            f"grid.x = {s.grid[0]} tiles of {bv} value columns (block {s.threads} / 32 x {COLS_PER_WARP}) cover "
            f"{s.grid[0] * bv} of the V = {V} columns: at block {s.threads} write grid.x = "
            + (f"{V // bv}" if V % bv == 0 else f"... (no whole number: {bv} does not divide {V})"))
    _plan(s)


class Bench:  # pragma: no mutate block (live only)
    def __init__(self):
        self.benches: dict[int, kda_decode.Bench] = {}

    def _bench(self, heads: int) -> kda_decode.Bench:
        if heads not in self.benches:
            self.benches[heads] = kda_decode.Bench(heads, cold=True)
        return self.benches[heads]

    def time(self, s: yourturn.Shape):
        p = _plan(s)
        return self._bench(s.grid[1]).time_cold(p.bv, p.mode, "tuned")

    def compare(self, s: yourturn.Shape):
        return None


TURN = yourturn.Turn(
    "03", kda_decode.FAMILY, lambda s: _plan(s).expr, "one decode step, 128 x 128 fp32 state per head",
    "a CUDA graph cycling through state copies (3 L2s)", rules, Bench,
    points=tuple(((V // (b // 32 * COLS_PER_WARP), h), b, 0) for h in HEADS for b in BLOCKS))

DOOR = TURN.door()
measure, data, recorded = DOOR.measure, DOOR.data, DOOR.recorded
