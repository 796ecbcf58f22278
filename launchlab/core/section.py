"""What a lecture section declares about itself: the manifest every section folder carries
(launchlab/sections/<folder>/manifest.py, one `SECTION = Section(...)`).

The course-wide faces read these and nothing else: the recorder writes every door's recording, the summary
gathers every section's headline figures, the self-test runs every section's checks, `bench` offers every
section's benches, the exercises' checker knows every section's exercises, and the course runs every
section's notebook. Adding a section is a folder with its manifest, its kernel file, its notebook, its test
and one line in the registry (launchlab/sections/__init__.py); docs/adding-a-section.md walks through it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable

from launchlab.core.door import Door

# (read the recorded result(s): data_dir -> result or tuple of results, the figures: result(s) -> dict)
Headline = tuple[Callable, Callable[..., dict]]


@dataclass(frozen=True)
class Section:
    key: str                                        # "00".."99": the notebook's number, the summary's key
    title: str                                      # the lecture section, in words
    notebook: str                                   # its notebook in notebooks/
    summary: str = ""                               # what a learner does there, in a line (the course's map)
    doors: tuple[Door, ...] = ()                    # the doors whose recordings the recorder writes
    headlines: tuple[Headline, ...] = ()            # what `summary --json` shows under `key`
    families: dict[str, tuple[str, ...]] = field(default_factory=dict)   # kernel families it brings itself
    checks: ModuleType | None = None                # its self-test checks (launchlab.core.checks.check)
    exercises: ModuleType | None = None             # its exercises (launchlab.core.exercise.register)
    figures: ModuleType | None = None               # its figures (matplotlib)
    explorers: tuple[type, ...] = ()                # its explorers (launchlab.core.explorer.Explorer)
    benches: dict[str, Callable[[], None]] = field(default_factory=dict)   # `python -m launchlab bench NAME`
    bad_inputs: tuple = ()                          # its bad inputs (launchlab.core.badinput.Case)
    graded: dict[str, str] = field(default_factory=dict)   # a graded lab: master, learner, report (paths)
    parts: tuple[str, ...] = ()                     # a long section's later notebooks: 02b_..., read after 02a_...
    turn: object = None                             # its your-turn launch (launchlab.core.yourturn.Turn)
    rerun: ModuleType | None = None                 # a graded lab's fix the grader re-runs (launchlab.faces.rerun)
    summary_key: str = ""                           # the key its headlines have in `summary --json` (default: key)

    @property
    def notebooks(self) -> tuple[str, ...]:
        """Every notebook of the section, in reading order: one, or its parts (02a, 02b) when a section would
        read longer than 40 minutes in one notebook (launchlab.faces.reading: words / 150 + a minute per code
        cell + a minute per figure or explorer). The parts keep the section's number, its summary key and its
        exercises' keys."""
        return (self.notebook,) + tuple(self.parts)

    def __post_init__(self):
        if not (len(self.key) == 2 and self.key.isdigit()):
            raise ValueError(f"section key {self.key!r}: two digits, the notebook's number")
        letters = "abcdefgh"[:len(self.notebooks)] if self.parts else [""]
        for nb, letter in zip(self.notebooks, letters):
            if not nb.startswith(self.key + letter + "_") or not nb.endswith(".ipynb"):
                raise ValueError(f"section {self.key}: its notebook {nb!r} must be {self.key}{letter}_<name>.ipynb"
                                 + (" (a section in parts names them 02a_..., 02b_..., in order)" if self.parts else ""))
