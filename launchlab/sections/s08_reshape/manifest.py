"""§8 when a reshape is not free."""
from launchlab.core.section import Section
from launchlab.sections.s08_reshape import checks, exercises, explorers, figures, reassociation, turn

SECTION = Section(
    key="08", title="§8 when a reshape is not free", notebook="08_when_a_reshape_is_not_free.ipynb",
    summary="the split count reassociates the combine; a gate that cannot see it; an approximation bounded to its regime",
    doors=(reassociation.DOOR,),
    headlines=((reassociation.recorded, reassociation.headline),),
    checks=checks, exercises=exercises, figures=figures, explorers=(explorers.SplitExplorer,),
    turn=turn.TURN,
)
