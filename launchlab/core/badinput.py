"""A bad input: a call the course must refuse before any launch, with the fix named, and the same API called
correctly right after (the session still works). The course's own cases are in launchlab.faces.badinputs;
a section declares its own in its manifest (`bad_inputs`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class Case:
    area: str
    bad: str                                   # the input, in words
    call: Callable[[], object]
    error: type
    fix: str                                   # a regex the message must match: the fix, named
    then: Callable[[], bool]                   # the same API, called correctly, right after
    gpu: bool = False
