"""Where the live course's time goes: every door's live measurement, one after another in one process, each under
cProfile, its wall time printed as it finishes and its heaviest calls kept (issue 14: the whole course live
within 6 minutes on the H200). A door that would start after the deadline is skipped and listed.

    python tools/live_profile.py [--out build/live_profile] [--deadline 540] [--quick] [DOOR ...]   (on a GPU)

Writes <out>/profile.txt (each door's top calls by cumulative time) and prints a table last.
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import sys
import time
from pathlib import Path

from launchlab import sections


def doors() -> dict:
    """{key: door} for every door a registered section declares, keyed by its recording (a second door of the
    same recording as recording.2, ...), the heaviest recordings first (their live runs took longest), so a
    deadline cuts only the cheap ones."""
    out: dict = {}
    for sec in sections.all():
        for door in sec.doors:
            key, n = door.recording, 2
            while key in out:
                key, n = f"{door.recording}.{n}", n + 1
            out[key] = door
    heavy = ("section06", "accuracy", "section02", "lab")
    return dict(sorted(out.items(), key=lambda kv: heavy.index(kv[0]) if kv[0] in heavy else len(heavy)))


DOORS = doors()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("doors", nargs="*", default=list(DOORS))
    ap.add_argument("--out", type=Path, default=Path("build/live_profile"))
    ap.add_argument("--deadline", type=float, default=540.0)
    ap.add_argument("--quick", action="store_true", help="each door's quick arguments, as the live course runs it")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    import cupy as cp
    start, rows, text = time.monotonic(), [], io.StringIO()
    for name in a.doors:
        if time.monotonic() - start > a.deadline:
            rows.append((name, None))
            continue
        prof = cProfile.Profile()
        t0 = time.monotonic()
        prof.enable()
        try:
            door = DOORS[name]
            door.measure(**(door.live_arguments() if a.quick else {}))
            err = ""
        except Exception as e:  # keep going: the table says which failed
            err = f"{type(e).__name__}: {str(e)[:200]}"
        prof.disable()
        s = time.monotonic() - t0
        rows.append((name, s))
        print(f"{name:<14} {s:7.1f} s {err}", flush=True)
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(45)
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(20)     # where the time itself goes
        text.write(f"\n\n######## {name}: {s:.1f} s {err}\n{buf.getvalue()}")
        (a.out / "profile.txt").write_text(text.getvalue())
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()
    print(f"\n{'door':<14} {'seconds':>8}")
    for name, s in rows:
        print(f"{name:<14} {'skipped' if s is None else f'{s:8.1f}'}")
    print(f"{'total':<14} {sum(s for _, s in rows if s):8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
