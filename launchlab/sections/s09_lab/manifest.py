"""The lab: the 8-step audit of the decode step under main, graded with otter-grader."""
from launchlab.core.section import Section
from launchlab.sections.s09_lab import explorers, figures, fix, graded, lab, smaller_gpus

SECTION = Section(
    key="09", title="the lab: a launch-geometry audit", notebook="09_lab_audit.ipynb",
    summary="the 8-step launch-geometry audit of the decode step, graded per step",
    doors=(lab.DOOR, smaller_gpus.DOOR, fix.DOOR),
    headlines=((graded.recorded_report, graded.headline), (graded.release_report, graded.release_headline)),
    figures=figures, explorers=(explorers.LabSweep,),
    rerun=fix,
    graded={"master": str(graded.MASTER), "learner": str(graded.LEARNER), "report": str(graded.REPORT)},
)
