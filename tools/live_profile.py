"""Where the live course's time goes: every door's live measurement, one after another in one process, each under
cProfile, its wall time printed as it finishes and its heaviest calls kept (issue 14: the whole course live
within 6 minutes on the H200). A door that would start after the deadline is skipped and listed.

    python tools/live_profile.py [--out build/live_profile] [--deadline 540] [DOOR ...]   (on a GPU)

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

from launchlab.sections.s00_start import instruments
from launchlab.sections.s01_arithmetic import achieved, bandwidth, staircases
from launchlab.sections.s01_arithmetic import driver_occupancy
from launchlab.sections.s02_width import accuracy, rmsnorm
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s04_derive import derive
from launchlab.sections.s06_one_binary import onebinary, pdlchain
from launchlab.sections.s07_bit_identity import identity
from launchlab.sections.s08_reshape import reassociation
from launchlab.sections.s09_lab import lab

# the heaviest first (their recordings took longest), so a deadline cuts only the cheap ones
DOORS = {"section06": onebinary.DOOR, "accuracy": accuracy.DOOR, "section02": rmsnorm.DOOR, "lab": lab.DOOR,
         "device": instruments.DOOR, "timeline": achieved.DOOR, "section04": derive.DOOR, "section07": identity.DOOR,
         "section08": reassociation.DOOR, "section03": kda.DOOR, "pdl": pdlchain.DOOR, "section01": bandwidth.DOOR,
         "waves": staircases.DOOR, "ceiling": bandwidth.CEILING, "occupancy": driver_occupancy.DOOR,
         "launch_costs": instruments.LAUNCH_COSTS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("doors", nargs="*", default=list(DOORS))
    ap.add_argument("--out", type=Path, default=Path("build/live_profile"))
    ap.add_argument("--deadline", type=float, default=540.0)
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
            DOORS[name].measure()
            err = ""
        except Exception as e:  # keep going: the table says which failed
            err = f"{type(e).__name__}: {str(e)[:200]}"
        prof.disable()
        s = time.monotonic() - t0
        rows.append((name, s))
        print(f"{name:<14} {s:7.1f} s {err}", flush=True)
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(45)
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
