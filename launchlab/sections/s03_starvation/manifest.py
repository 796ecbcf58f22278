"""§3 starvation vs contention."""
from launchlab.core.section import Section
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s03_starvation import (bench, checks, contrast, exercises, explorers, figures, kda,
                                               smaller_gpus, turn)


def _kda_and_ceiling(data_dir=None):
    """The starvation ratio needs two recordings: the KDA step's and the copy ceiling's (its floor)."""
    return kda.recorded(data_dir), bandwidth.CEILING.recorded(data_dir)


def _contrast_and_ceiling(data_dir=None):
    """The contrast kernel's ratio is against the same floor: its recording and the copy ceiling's."""
    return contrast.recorded(data_dir), bandwidth.CEILING.recorded(data_dir)


SECTION = Section(
    key="03", title="§3 starvation vs contention", notebook="03a_starvation_vs_contention.ipynb", parts=("03b_the_fix_one_change_at_a_time.ipynb",),
    summary="the KDA decode step: grid = n_head vs value tiles; the floor and the ratio; the variance discriminator; write elision",
    doors=(kda.DOOR, contrast.DOOR, smaller_gpus.DOOR, turn.DOOR),
    headlines=((kda.recorded, kda.headline), (_kda_and_ceiling, kda.starvation_headline),
               (_contrast_and_ceiling, contrast.headline)),
    checks=checks, exercises=exercises, figures=figures, explorers=(explorers.KDAExplorer,),
    benches={"kda": bench.bench_kda},
    turn=turn.TURN,
)
