"""§2 the barrier was right; the width was wrong."""
from launchlab.core.section import Section
from launchlab.sections.s02_width import (accuracy, bad_inputs, bench, checks, exercises, explorers, figures, rmsnorm,
                                          turn)
from launchlab.sections.s06_one_binary import pdlchain

SECTION = Section(
    key="02", title="§2 the barrier was right; the width was wrong", notebook="02a_the_width_was_wrong.ipynb", parts=("02b_the_width_on_the_whole_step.ipynb",),
    summary="the single-block RMS norm: 327 norms per token, widened apply, byte-identical output; the widened reduction's KL; the launch path",
    doors=(rmsnorm.DOOR, accuracy.DOOR, turn.DOOR),
    headlines=((rmsnorm.recorded, rmsnorm.headline), (pdlchain.recorded, pdlchain.headline_02),
               (accuracy.recorded, accuracy.headline)),
    checks=checks, exercises=exercises, figures=figures, explorers=(explorers.RMSExplorer,),
    benches={"rms": bench.bench_rms}, bad_inputs=bad_inputs.CASES,
    turn=turn.TURN,
)
