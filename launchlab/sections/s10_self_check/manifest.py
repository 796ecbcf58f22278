"""The self-check: the lecture's nine questions (the instructor's model answers in lab_solutions/)."""
from launchlab.core.section import Section
from launchlab.sections.s10_self_check import exercises

SECTION = Section(key="10", title="self-check", notebook="10_self_check.ipynb",
    summary="the lecture's nine questions, with feedback", exercises=exercises)
