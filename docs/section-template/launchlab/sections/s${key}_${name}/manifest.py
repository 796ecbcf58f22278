"""${title}: what this section declares to the course (launchlab.core.section)."""
from launchlab.core.section import Section
from launchlab.sections.${folder} import checks, exercises, figures, lesson

SECTION = Section(
    key="${key}", title="${title}", notebook="${key}_${name}.ipynb",
    summary="how many blocks of ${family}_scale an SM holds at each block size",
    doors=(lesson.DOOR,),
    headlines=((lesson.recorded, lesson.headline),),
    families={lesson.FAMILY: (lesson.EXPR,)},
    checks=checks, exercises=exercises, figures=figures,
)
