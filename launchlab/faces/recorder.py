"""The recorder: every section's door measured on a live GPU, written into data/recordings/.

    python -m launchlab record                 # every recording
    python -m launchlab record section01       # one of them

A recording is the union of its doors' results (section01 holds §1's streaming read and its wave
staircases). Each carries its provenance and the sha256 of every kernel source its doors ran
(launchlab.core.recordings). Numbers are written exactly as measured; nothing here (or anywhere) edits one.
"""
from __future__ import annotations

import sys
import time

from launchlab.core import mode, provenance, recordings
from launchlab.core.door import Door
from launchlab.sections.s00_start import instruments
from launchlab.sections.s01_arithmetic import achieved, bandwidth, occupancy_probe, staircases
from launchlab.sections.s02_width import rmsnorm
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s04_derive import derive
from launchlab.sections.s06_one_binary import accuracy, onebinary, pdlchain
from launchlab.sections.s07_bit_identity import identity
from launchlab.sections.s08_reshape import reassociation
from launchlab.sections.s09_lab import lab

RECORDINGS: dict[str, tuple[Door, ...]] = {
    "device": (instruments.DOOR,),
    "occupancy": (occupancy_probe.DOOR,),
    "section01": (bandwidth.DOOR, staircases.DOOR),
    "section02": (rmsnorm.DOOR,),
    "section03": (kda.DOOR,),
    "timeline": (achieved.DOOR,),
    "section04": (derive.DOOR,),
    "section06": (onebinary.DOOR,),
    "section07": (identity.DOOR,),
    "section08": (reassociation.DOOR,),
    "lab": (lab.DOOR,),
    "pdl": (pdlchain.DOOR,),
    "accuracy": (accuracy.DOOR,),
}
SECTIONS = tuple(RECORDINGS)


def families(name: str) -> list[str]:
    """The kernel families whose sources a recording hashes: every family its doors ran."""
    return sorted({f for d in RECORDINGS[name] for f in d.families})


def measure(name: str) -> dict:
    """Measure every door of one recording now and merge their parts of the recording's data."""
    data: dict = {}
    for door in RECORDINGS[name]:
        part = door.dump(door.measure())
        clash = set(part) & set(data)
        if clash:
            raise ValueError(f"recording {name}: doors write the same keys {sorted(clash)}")
        data.update(part)
    return data


def record(names=SECTIONS, data_dir=None) -> list[str]:
    mode.require_live("recording")
    unknown = [n for n in names if n not in RECORDINGS]
    if unknown:
        raise SystemExit(f"unknown recording(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    written = []
    for name in names:
        t0 = time.perf_counter()
        print(f"recording {name} ...", file=sys.stderr, flush=True)
        data = measure(name)
        p = recordings.save(name, data, families(name), provenance.collect(), data_dir)
        print(f"  wrote {p} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        written.append(str(p))
    return written
