"""§6's your-turn launch: the RMS norm's two arms of one build, measured the way §6 measures a gate: ABBA.

Arm A is the original 128-thread kernel (LAUNCHLAB_RMS_WIDE=0), arm B the widened one at the block the learner
writes (LAUNCHLAB_RMS_WIDE=1); both are in the same compiled module, so the comparison is of geometry alone.
Three pairs, A B | B A | A B, as §6 and the lab measure a gate, each rep a CUDA graph of 327 norms of one row
(hot L2); every rep is printed, and the two arms' outputs are compared byte for byte.

The norm's workload, rules and single-arm bench live here too and §2's turn (launchlab.sections.s02_width.turn)
uses them: §2's notebooks already read §6's PDL chain, so the import runs that way and never back.
"""
from __future__ import annotations

from launchlab.core import launch, timing, yourturn
from launchlab.kernels import rms_norm

N = 7168
MAX_ROWS = 132
BLOCKS = tuple(range(128, 1025, 32))            # every block the widened kernel takes



def _plan(s: yourturn.Shape) -> rms_norm.Plan:
    return rms_norm.plan(N, True, s.threads, wide=True, reduce="narrow", unroll="auto")


def rules(s: yourturn.Shape) -> None:
    if s.grid[1:] != (1, 1) or s.block[1:] != (1, 1):
        raise launch.LaunchError(f"the norm indexes blockIdx.x (its row) and threadIdx.x only: a 1-D grid and block, "
                                 f"got grid {s.grid}, block {s.block}")
    if not 1 <= s.blocks <= MAX_ROWS:
        raise launch.LaunchError(f"grid = rows: one block normalizes one row, and this cell holds 1 to {MAX_ROWS} "
                                 f"rows of {N:,}; got grid {s.blocks}")
    if s.smem:
        raise launch.LaunchError("the norm's shared memory is static (its 4-warp reduction): leave smem at 0")
    _plan(s)                                    # refuses a block the widened kernel cannot run


class Bench:  # pragma: no mutate block (live only)
    def __init__(self):
        import cupy as cp
        self.cp = cp
        self.x = cp.asarray(rms_norm.rows(3, N, MAX_ROWS))
        self.w = cp.asarray(rms_norm.weight(N))
        self.y = cp.empty_like(self.x)
        self.ref = cp.empty_like(self.x)

    def launch(self, s: yourturn.Shape, out=None, wide: bool = True):
        x = self.x[:s.blocks]
        rms_norm.rms_norm(x, self.w, (self.y if out is None else out)[:s.blocks], rms_norm.EPS, N,
                          block=s.threads if wide else None, wide=wide, reduce="narrow", unroll="auto")

    def time(self, s: yourturn.Shape):
        return yourturn.graph_time(lambda: self.launch(s), rms_norm.NORMS_PER_TOKEN)

    def compare(self, s: yourturn.Shape):
        self.launch(s)
        self.launch(s, self.ref, wide=False)
        same, diff = yourturn.identical(self.cp.asnumpy(self.y[:s.blocks]), self.cp.asnumpy(self.ref[:s.blocks]))
        return yourturn.Compare("the original 128-thread norm (rms_norm_f32)", same, diff, s.blocks * N)


PAIRS = 3


class ABBABench(Bench):  # pragma: no mutate block (live only)
    def time(self, s: yourturn.Shape):
        a = lambda: yourturn.graph_time(lambda: self.launch(s, wide=False), rms_norm.NORMS_PER_TOKEN)  # noqa: E731
        b = lambda: yourturn.graph_time(lambda: self.launch(s), rms_norm.NORMS_PER_TOKEN)  # noqa: E731
        return timing.abba(a, b, pairs=PAIRS, labels=("the original 128 threads", "your block"))


TURN = yourturn.Turn(
    "06", rms_norm.FAMILY, lambda s: _plan(s).expr, f"one row of {N:,} per block, both arms",
    f"ABBA, each rep a CUDA graph of {rms_norm.NORMS_PER_TOKEN} norms", rules, ABBABench,
    points=tuple((1, b, 0) for b in BLOCKS), pairs=PAIRS)

DOOR = TURN.door()
measure, data, recorded = DOOR.measure, DOOR.data, DOOR.recorded
