"""The recorder: every section's door measured on a live GPU, written into data/recordings/.

    python -m launchlab record                 # every recording
    python -m launchlab record section01       # one of them

Every section's manifest names its doors (launchlab.sections). A recording is the union of its doors' results (section01 holds §1's streaming read and its wave
staircases). Each carries its provenance and the sha256 of every kernel source its doors ran
(launchlab.core.recordings). Numbers are written exactly as measured; nothing here (or anywhere) edits one.
"""
from __future__ import annotations

import sys
import time

from launchlab import sections
from launchlab.core import mode, provenance, recordings
from launchlab.core.door import Door


def _recordings() -> dict[str, tuple[Door, ...]]:
    """{recording: its doors}, from every registered section's manifest, in the registry's order."""
    out: dict[str, tuple[Door, ...]] = {}
    for sec in sections.all():
        for door in sec.doors:
            out[door.recording] = out.get(door.recording, ()) + (door,)
    return out


RECORDINGS: dict[str, tuple[Door, ...]] = _recordings()
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
