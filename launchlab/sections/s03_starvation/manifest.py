"""§3 starvation vs contention."""
from launchlab.core.section import Section
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s03_starvation import bench, checks, exercises, explorers, figures, kda


def _kda_and_ceiling(data_dir=None):
    """The starvation ratio needs two recordings: the KDA step's and the copy ceiling's (its floor)."""
    return kda.recorded(data_dir), bandwidth.CEILING.recorded(data_dir)


SECTION = Section(
    key="03", title="§3 starvation vs contention", notebook="03_starvation_vs_contention.ipynb",
    summary="the KDA decode step: grid = n_head vs value tiles; the floor and the ratio; the variance discriminator; write elision",
    doors=(kda.DOOR,),
    headlines=((kda.recorded, kda.headline), (_kda_and_ceiling, kda.starvation_headline)),
    checks=checks, exercises=exercises, figures=figures, explorers=(explorers.KDAExplorer,),
    benches={"kda": bench.bench_kda},
)
