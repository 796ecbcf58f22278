"""§2's your-turn launch: the widened RMS norm (rms_norm_wide, the narrow 128-thread reduction kept) at the block
the learner writes, one block per row of 7,168 (the lecture's hidden size).

The grid is the number of rows: a norm cannot give one row two blocks without a second pass, so the grid is
fixed by the batch and the block is the one thing a width fix can change. Timed as the lecture counts it:
327 norms in one CUDA graph, hot L2 (the same row every launch). Its output is compared byte for byte with the
original 128-thread kernel's (rms_norm_f32) on the same rows. (The norm's rules and bench are shared with §6's
turn and live there: launchlab.sections.s06_one_binary.turn.)
"""
from __future__ import annotations

from launchlab.core import yourturn
from launchlab.kernels import rms_norm
from launchlab.sections.s06_one_binary.turn import BLOCKS, MAX_ROWS, N, Bench, _plan, rules  # noqa: F401

ROWS = (1, 2, 4, 8, 16, 32, 64, MAX_ROWS)


TURN = yourturn.Turn(
    "02", rms_norm.FAMILY, lambda s: _plan(s).expr, f"one row of {N:,} per block, float4 apply",
    f"a CUDA graph of {rms_norm.NORMS_PER_TOKEN} norms", rules, Bench,
    points=tuple((g, b, 0) for g in ROWS for b in BLOCKS))

DOOR = TURN.door()
measure, data, recorded = DOOR.measure, DOOR.data, DOOR.recorded
