"""One folder per lecture section, each with its manifest (`manifest.py`: `SECTION = Section(...)`, see
launchlab.core.section) beside the modules the section owns: its lessons and their doors, its figures,
explorers, exercises, self-test checks and benches.

This is the registry: the course-wide faces (recorder, summary, selftest, bench, exercises, course, grading)
find the sections here and nowhere else. A new section is one line in FOLDERS.
"""
from __future__ import annotations

import importlib
from functools import cache

from launchlab.core import sources
from launchlab.core.section import Section

FOLDERS = (
    "s00_start",
    "s01_arithmetic",
    "s02_width",
    "s03_starvation",
    "s04_derive",
    "s05_sharding",
    "s06_one_binary",
    "s07_bit_identity",
    "s08_reshape",
    "s09_lab",
    "s10_self_check",
    "s11_audit",
)


@cache
def all() -> tuple[Section, ...]:  # noqa: A001 -- the registry's one question: every section, in order
    """Every registered section's manifest, in the registry's order (the kernel families a section brings
    itself are declared to launchlab.core.sources on the way)."""
    out = []
    for folder in FOLDERS:
        s = importlib.import_module(f"{__name__}.{folder}.manifest").SECTION
        for fam, exprs in s.families.items():
            sources.declare(fam, exprs)
        out.append(s)
    keys = [s.key for s in out]
    if len(set(keys)) != len(keys):
        raise ValueError(f"two sections share a key: {keys}")
    return tuple(out)


def get(key: str) -> Section:
    for s in all():
        if s.key == key:
            return s
    raise KeyError(f"no section {key!r}; registered: {', '.join(s.key for s in all())}")


def course_map(link: str = "") -> str:
    """The course's map as a markdown table, one row per registered section: its notebook (linked, under
    `link`), its lecture section and what a learner does there. Notebook 00 shows it; the README holds it
    between its `sections` markers (python -m launchlab sections --readme writes it there)."""
    rows = ["| notebook | lecture section | what you do there |", "|---|---|---|"]
    for s in all():
        nbs = " · ".join(f"[{n[:-len('.ipynb')]}]({link}{n})" for n in s.notebooks)
        rows.append(f"| {nbs} | {s.title} | {s.summary} |")
    return "\n".join(rows)
