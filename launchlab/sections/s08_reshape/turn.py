"""§8's your-turn launch: §4's MLA decode (launchlab.sections.s04_derive.turn) at the split count the learner
writes, read for its bytes: the combine adds the splits' partial results in split order, so every split count
is a different association of the same sum, and cmp against the decode at 256 splits says which move bytes.
It replays §4's recorded points (the same kernel, workload and rules)."""
from __future__ import annotations

from launchlab.core import yourturn
from launchlab.sections.s04_derive import turn as mla_turn

T = mla_turn.TURN
TURN = yourturn.Turn("08", T.family, T.kernel, T.what, T.instrument, T.rules, T.bench, shares=T)
