"""The self-check: the lecture's nine questions, with their key (key.json) -- formative, it ships to learners."""
from launchlab.core.section import Section
from launchlab.sections.s10_self_check import exercises

SECTION = Section(
    key="10", title="self-check", notebook="10_self_check.ipynb",
    summary="the lecture's nine questions: numbers and choices checked on the spot, written answers against a checklist",
    exercises=exercises,
    headlines=((exercises.written, exercises.headline),),
)
