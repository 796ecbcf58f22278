"""Where a live door's time goes: each named door's measure() under cProfile, the top functions by cumulative
time written to OUT/door_profile.<recording>.txt, and a line per door (wall seconds). A cost model for the live
course's wait (issue 26), not a benchmark.

    python tools/door_profile.py OUT DOOR_RECORDING ...     (on a GPU)
"""
from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

from launchlab import sections


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    out, names = Path(argv[0]), argv[1:]
    out.mkdir(parents=True, exist_ok=True)
    doors = {d.recording + ":" + d.name: d for s in sections.all() for d in s.doors}
    rows = []
    for key, door in doors.items():
        if not any(key.startswith(n + ":") for n in names):
            continue
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        door.measure()
        prof.disable()
        wall = time.perf_counter() - t0
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(45)
        (out / f"door_profile.{door.recording}.{len(rows)}.txt").write_text(f"{key}: {wall:.1f} s\n" + s.getvalue())
        rows.append((key, wall))
        print(f"{wall:7.1f} s  {key}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
