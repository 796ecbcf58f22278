"""§5 each optimization plants the next occupancy bug (it reads §3's recording: the tp sweep)."""
from launchlab.core.section import Section
from launchlab.sections.s03_starvation import kda, smaller_gpus
from launchlab.sections.s05_sharding import audit, exercises, explorers, figures, turn

SECTION = Section(
    key="05", title="§5 each optimization plants the next occupancy bug", notebook="05_sharding_plants_bugs.ipynb",
    summary="head sharding collapses every grid derived from heads; the audit that greps for the dimension",
    headlines=((kda.recorded, audit.headline), (smaller_gpus.recorded, smaller_gpus.headline)),
    exercises=exercises, figures=figures, explorers=(explorers.SliceStarvationExplorer,),
    turn=turn.TURN,
)
