"""Where an eager decode step's host time goes: one full-depth model at ctx 2,048, a few warm steps, then N eager
steps timed plainly (wall per step, GPU synchronized at the end) and N more under cProfile; prints the heaviest
calls by own time and by cumulative time (issue 14: eager steps are most of the live course's host time).

    python tools/step_profile.py [--steps 10] [--ctx 2048] [--out build/step_profile.txt]   (on a GPU)
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

from launchlab.core import gates
from launchlab.kernels import decode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--out", type=Path, default=Path("build/step_profile.txt"))
    a = ap.parse_args(argv)
    import cupy as cp
    model = decode.build(decode.Config(), ctx=a.ctx, extra=2 * a.steps + 4)
    pos = a.ctx
    with gates.setting(**gates.preset("main")):
        for _ in range(3):
            model.step(pos)
            pos += 1
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            model.step(pos)
            pos += 1
        host = (time.perf_counter() - t0) / a.steps
        cp.cuda.Device().synchronize()
        wall = (time.perf_counter() - t0) / a.steps
        n = len(model.launches(pos - 1))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(a.steps):
            model.step(pos)
            pos += 1
        prof.disable()
        cp.cuda.Device().synchronize()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    st.sort_stats("tottime").print_stats(30)
    st.sort_stats("cumulative").print_stats(30)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(buf.getvalue())
    print(buf.getvalue())
    print(f"eager step, ctx {a.ctx:,}, {n} launches: host {1e3 * host:.1f} ms per step "
          f"({1e6 * host / n:.1f} us per launch), wall {1e3 * wall:.1f} ms per step (hot)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
