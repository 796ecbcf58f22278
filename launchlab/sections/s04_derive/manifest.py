"""§4 derive the constant."""
from launchlab.core.section import Section
from launchlab.sections.s04_derive import bench, checks, derive, exercises, explorers, figures, turn

SECTION = Section(
    key="04", title="§4 derive the constant", notebook="04_derive_the_constant.ipynb",
    summary="the MLA split count derived from the shape and a named target, against a pinned 1024-token slice floor",
    doors=(derive.DOOR, turn.DOOR),
    headlines=((derive.recorded, derive.headline),),
    checks=checks, exercises=exercises, figures=figures, explorers=(explorers.MLAExplorer,),
    benches={"mla": bench.bench_mla},
    turn=turn.TURN,
)
