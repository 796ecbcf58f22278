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

The course's live run measures with a door's `quick` arguments where it has them (fewer tokens, pairs or reps
than the recorder's, never a different instrument), so that no notebook keeps a learner waiting for minutes;
LAUNCHLAB_LIVE_FULL=1 measures with the recorder's own arguments. A door made with replayed_live=True (the
sweeps inside green contexts of N SMs, issue 29) answers with its recording in a live session too, unless the
learner asks: data(refresh=True), or LAUNCHLAB_REMEASURE=<recording>[,...] (or `all`); its single points (an
explorer's slider) are still relaunched live. Either way the result prints the tokens, pairs
and reps it holds, and a door that measures shows a progress bar timed by its last live run.

A recording file can hold the results of several doors (section01 holds §1's streaming read and its wave
staircases): each door's `dump` writes its own keys of the recording's data and its `parse` reads them.
"""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Generic, TypeVar

from launchlab.core import mode, progress, recordings, reuse

T = TypeVar("T")


_shared: dict | None = None         # inside reading(): each door's recording decoded once, the result shared


@contextmanager
def reading():
    """Within the block, a door's recorded() decodes its recording once and hands every later call the same
    result: for readers that only read (the summary asks several headlines of one recording; §3's is decoded
    nine times otherwise). Outside it every call decodes anew, so nothing a caller changes leaks to the next."""
    global _shared
    outer, _shared = _shared, ({} if _shared is None else _shared)
    try:
        yield
    finally:
        _shared = outer


def remeasure(recording: str) -> bool:
    """Whether LAUNCHLAB_REMEASURE (a comma-separated list of recordings, or `all`) asks to re-measure `recording`
    in a live session rather than replay it (a door with replayed_live)."""
    asked = {x.strip() for x in os.environ.get("LAUNCHLAB_REMEASURE", "").split(",") if x.strip()}
    return "all" in asked or recording in asked


@dataclass
class Door(Generic[T]):
    name: str                                  # what the door measures, in words (for progress and errors)
    recording: str                             # the recording file (data/recordings/<recording>.json)
    families: tuple[str, ...]                  # the kernel families whose sources the recording hashes
    measure: Callable[[], T]                   # live: measure now
    parse: Callable[[dict, str], T]            # (recording data, provenance line) -> typed result
    dump: Callable[[T], dict] | None = None    # typed result -> its keys of the recording data (None: a view)
    quick: dict = field(default_factory=dict)  # measure()'s arguments in the course's live run (LAUNCHLAB_LIVE_FULL=1: none)
    replayed_live: bool = False                # live too, data() is the recording unless asked to re-measure
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
        if self.replayed_live and not refresh and self._cache is None and not remeasure(self.recording):
            print(f"{self.name}: the H200 recording, live too (re-measure with data(refresh=True), or "
                  f"LAUNCHLAB_REMEASURE={self.recording})")
            return self.recorded()
        if self._cache is None or refresh:
            hit = None if refresh else reuse.load(self)
            t0 = time.perf_counter()
            if hit is not None:
                self._cache = self.parse(hit.data, f"live, {hit.note}")
                print(f"{self.name}: {hit.note}")
            else:
                kwargs = self.live_arguments()
                with progress.Timed(self.name, reuse.expected_seconds(self)):
                    self._cache = self.measure(**kwargs)
                reuse.save(self, self._cache)
            reuse.log(self, time.perf_counter() - t0, reused=hit is not None)
            try:
                self._cache._door = self      # a live result knows its door: launchlab.core.machine draws the
            except (AttributeError, TypeError):   # H200's recording beside it on another GPU
                pass
        return self._cache

    def live_arguments(self) -> dict:
        """What measure() gets in a notebook: the door's quick arguments, or none with LAUNCHLAB_LIVE_FULL=1."""
        full = os.environ.get("LAUNCHLAB_LIVE_FULL", "").strip()
        if full not in ("", "0", "1"):
            raise ValueError(f"LAUNCHLAB_LIVE_FULL={full!r}: 1 measures with the recorder's arguments, 0 or unset "
                             f"with the course's quick ones")
        return {} if full == "1" else dict(self.quick)

    def recorded(self, data_dir=None) -> T:
        key = (self.name, self.recording, str(data_dir))
        if _shared is not None and key in _shared:
            return _shared[key]
        r = recordings.load(self.recording, data_dir)
        out = self.parse(r.data, r.describe())
        if _shared is not None:
            _shared[key] = out
        return out

    def choose(self, live: Callable[[], object], replay: Callable[[], object]):
        """The one live/replay branch for a single point: `live()` relaunches now, `replay()` looks it up."""
        return mode.choose(live, replay)

