"""One door per section: the only place where live and replay part ways.

A section module (bandwidth, waves, rmsnorm, kda, ...) owns a Door and exposes three calls:

    measure()    live: run the section's measurements now and return its typed result
    data()       what the notebook shows: live -> measure() (once per process, then cached; a later notebook
                 of the session reuses it: launchlab.core.reuse);
                 replay -> the H200 recording, decoded into the same typed result
    recorded()   the recording, whatever the mode (the summary and the tests read this)

Notebooks, widgets, benches and the recorder call only these, so no cell branches on the mode and no cell
reads a recording's JSON. `Door.choose(live=..., replay=...)` is the one branch for a single point a widget
asks for (relaunch the kernel now, or look the point up in the recording).

A recording file can hold the results of several doors (section01 holds §1's streaming read and its wave
staircases): each door's `dump` writes its own keys of the recording's data and its `parse` reads them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

from launchlab.core import mode, recordings, reuse

T = TypeVar("T")


@dataclass
class Door(Generic[T]):
    name: str                                  # what the door measures, in words (for progress and errors)
    recording: str                             # the recording file (data/recordings/<recording>.json)
    families: tuple[str, ...]                  # the kernel families whose sources the recording hashes
    measure: Callable[[], T]                   # live: measure now
    parse: Callable[[dict, str], T]            # (recording data, provenance line) -> typed result
    dump: Callable[[T], dict] | None = None    # typed result -> its keys of the recording data (None: a view)
    _cache: T | None = field(default=None, init=False, repr=False)

    @property
    def live(self) -> bool:
        return mode.is_live()

    def data(self, refresh: bool = False) -> T:
        """Live: measured now (cached for the process, and reused by a later notebook of the session on this
        GPU while kernels, code and gates match: launchlab.core.reuse; refresh=True measures again). Replay: the
        recording."""
        if not self.live:
            return self.recorded()
        if self._cache is None or refresh:
            hit = None if refresh else reuse.load(self)
            t0 = time.perf_counter()
            if hit is not None:
                self._cache = self.parse(hit.data, f"live, {hit.note}")
                print(f"{self.name}: {hit.note}")
            else:
                self._cache = self.measure()
                reuse.save(self, self._cache)
            reuse.log(self, time.perf_counter() - t0, reused=hit is not None)
        return self._cache

    def recorded(self, data_dir=None) -> T:
        r = recordings.load(self.recording, data_dir)
        return self.parse(r.data, r.describe())

    def choose(self, live: Callable[[], object], replay: Callable[[], object]):
        """The one live/replay branch for a single point: `live()` relaunches now, `replay()` looks it up."""
        return mode.choose(live, replay)

