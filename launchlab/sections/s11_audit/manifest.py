"""§11 audit a real model."""
from launchlab.core.section import Section
from launchlab.sections.s11_audit import exercises, figures, realmodels

SECTION = Section(
    key="11", title="§11 audit a real model (the lab's audit on code nobody here wrote)",
    notebook="11_audit_a_real_model.ipynb",
    summary="the lab's audit on three transformers decode steps: the ranking by idle SM-time, ncu's floors for the "
            "offenders, one change a user can make, the CUPTI path on the course's own step",
    doors=(realmodels.DOOR,),
    headlines=((realmodels.recorded, realmodels.headline),),
    summary_key="audit",
    exercises=exercises, figures=figures,
)
