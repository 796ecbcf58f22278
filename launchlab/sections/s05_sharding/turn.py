"""§5's your-turn launch: §3's KDA decode step, launched at one rank's head count after sharding.

The same kernel, workload and rules as §3 (launchlab.sections.s03_starvation.turn), so it replays §3's recorded
points: 96 heads at tp = 1 down to 12 at tp = 8, each at every block the tuned body takes.
"""
from __future__ import annotations

from launchlab.core import yourturn
from launchlab.sections.s03_starvation import turn as kda_turn

T = kda_turn.TURN
TURN = yourturn.Turn("05", T.family, T.kernel, T.what, T.instrument, T.rules, T.bench, shares=T)
