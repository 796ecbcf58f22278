"""§4's your-turn launch: the MLA split kernel (kernels/mla_decode.cu, the pipeline gate's body) with the split
count the learner writes as grid.x, then the combine, for one request of 16 heads over 131,072 tokens.

grid = (splits, head tiles, requests): 16 heads are one tile of 16 and this cell decodes one request, so the
learner writes grid.x; the kernel's four warps fix the block at 128. A split count must divide the context
into equal slices of whole tokens as the planner does (slice = ceil(ctx / splits)); one that does not gives
fewer splits than written and is refused, naming the count it would give. Shared memory is the body's own
(mla.smem_bytes) unless the learner pads it (more shared memory, fewer blocks per SM). Timed cold: a CUDA graph
of 8 decodes alternating two copies of the 151 MB cache. The output is compared byte for byte with the same
decode at §8's base split count, 256.
"""
from __future__ import annotations

import dataclasses

from launchlab.core import launch, occupancy, timing, yourturn
from launchlab.kernels import mla, splits

CTX, HEADS, BASE_S = 131_072, 16, 256
SPLITS = tuple(s for s in (1, 2, 4, 8, 16, 32, 64, 66, 96, 100, 128, 131, 132, 133, 160, 192, 200, 232, 256, 263,
                           264, 265, 280, 300, 350, 396, 400, 1024)
               if splits.forced(CTX, HEADS, 1, splits=s).splits == s)


def _plan(s: yourturn.Shape) -> mla.Plan:
    return mla.plan(1, HEADS, CTX, n_splits=s.grid[0])


def rules(s: yourturn.Shape) -> yourturn.Shape:
    if s.block != (mla.BLOCK, 1, 1):
        raise launch.LaunchError(f"the split kernel runs four warps, each on its rows of the head tile: block "
                                 f"{mla.BLOCK}, got {s.block}")
    if s.grid[1] != 1 or s.grid[2] != 1:
        raise launch.LaunchError(f"grid = (splits, head tiles, requests): {HEADS} heads are one tile of "
                                 f"{mla.HEAD_TILE} and this cell decodes one request, so grid.y = grid.z = 1; got "
                                 f"{s.grid}")
    try:
        sp = splits.forced(CTX, HEADS, 1, splits=s.grid[0])
    except splits.SplitError as e:
        raise launch.LaunchError(str(e)) from None
    if sp.splits != s.grid[0]:
        raise launch.LaunchError(f"{s.grid[0]} splits of {CTX:,} tokens: slices of ceil({CTX:,} / {s.grid[0]}) = "
                                 f"{sp.slice_tokens} tokens make {sp.splits} splits, not {s.grid[0]} -- write "
                                 f"grid.x = {sp.splits}, or a count whose slices come out even")
    need = _plan(s).smem
    if s.smem and s.smem < need:
        raise launch.LaunchError(f"the split kernel's body needs {need:,} B of shared memory per block; {s.smem:,} "
                                 f"is too little (0 asks for exactly what it needs, more pads it)")
    return yourturn.Shape(s.grid, s.block, s.smem or need)


class Bench:  # pragma: no mutate block (live only)
    def __init__(self):
        import cupy as cp
        self.cp = cp
        d = mla.inputs(1, HEADS, CTX)
        self.q = cp.asarray(d["q"])
        self.kvs = [cp.asarray(d["kv"]) for _ in range(2)]
        self.scale = d["scale"]
        base = mla.plan(1, HEADS, CTX, n_splits=BASE_S)
        self.base = cp.asnumpy(mla.Decoder(self.q, self.kvs[0], self.scale, base)())

    def _decoders(self, s: yourturn.Shape):
        p = _plan(s)
        if s.smem != p.smem:
            p = dataclasses.replace(p, smem=s.smem, occupancy=occupancy.occupancy(mla.BLOCK, p.registers, s.smem))
        return [mla.Decoder(self.q, kv, self.scale, p) for kv in self.kvs]

    def time(self, s: yourturn.Shape):
        return timing.graph_cold(self._decoders(s), launches=8, reps=10)

    def compare(self, s: yourturn.Shape):
        out = self.cp.asnumpy(self._decoders(s)[0]())
        same, diff = yourturn.identical(out, self.base)
        return yourturn.Compare(f"the same decode at {BASE_S} splits", same, diff, out.size)


TURN = yourturn.Turn(
    "04", mla.FAMILY, lambda s: _plan(s).kernel, f"one request, {HEADS} heads, {CTX:,} tokens of bf16 cache",
    "a CUDA graph of 8 decodes over two cache copies", rules, Bench,
    points=tuple(((g, 1, 1), mla.BLOCK, 0) for g in SPLITS))

DOOR = TURN.door()
measure, data, recorded = DOOR.measure, DOOR.data, DOOR.recorded
