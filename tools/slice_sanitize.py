"""compute-sanitizer's green-context target (issue 29): the course's kernels inside slices of the H200.

    python tools/slice_sanitize.py [N ...]        (on a GPU; default 16 64; tools/sanitize_sweep.py runs it)

Inside each slice of N SMs (launchlab.core.slices): the wave kernels against numpy, every KDA arm of the
lecture's fix (main, the fix, tuned) against the float64 reference from one initial state, each stamped launch
proved to stay in the slice -- launched directly and replayed from a CUDA graph captured on the slice's stream
-- and the §1 staircase's stamped grids around its step. Prints one `ok NAME` line per check (what the sweep
compares with the unsanitized run) and `P passed, F failed` last.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from launchlab.core import slices, timing  # noqa: E402
from launchlab.kernels import kda_decode, waves  # noqa: E402
from launchlab.sections.s01_arithmetic import smaller_gpus as waves_on  # noqa: E402
from launchlab.sections.s03_starvation import smaller_gpus as kda_on  # noqa: E402


def checks(n: int):
    w = waves.WaveKernels()
    b = kda_decode.Bench(kda_on.N_HEAD)
    with slices.SMSlice(n) as s:
        errs = w.check_references()
        yield f"waves-on-{n}sm", max(errs.values()) < 1e-4, f"max rel err {max(errs.values()):.1e}"
        for g in (n, n + 1, 2 * n + 1):
            st = waves_on._stamped(w, g, s)
            yield f"staircase-grid{g}-on-{n}sm", st.distinct_sms <= n, f"{st.distinct_sms} SMs, {st.waves} waves"
        ref_o, ref_s = kda_decode.reference(**b.host)
        for arm, (body, bv, mode_) in kda_on.ARMS.items():
            o, st_ = b.one_step(bv, mode_, body)
            e = max(kda_decode.rel_err(o, ref_o), kda_decode.rel_err(st_, ref_s))
            yield f"kda-{arm}-on-{n}sm", e < 1e-5, f"rel err {e:.1e}"
        for arm in kda_on.STAMPED:
            for how in ("launch", "graph"):
                p = kda_on._stamp(b, arm, how, s)
                yield f"kda-{arm}-{how}-stamps-on-{n}sm", p.distinct_sms <= n, f"{p.blocks} blocks on {p.distinct_sms} SMs"
        t = timing.graph(lambda: b.run(kda_decode.BV_TILED, "rn", "walk"), launches=4, reps=2)
        yield f"kda-fix-graph-timed-on-{n}sm", t.median > 0, f"{t.median:.1f} us hot"


def main(argv: list[str]) -> int:
    ns = [int(a) for a in argv] or [16, 64]
    passed = failed = 0
    for n in ns:
        for name, ok, msg in checks(n):
            print(f"{'ok  ' if ok else 'FAIL'} {name}  {msg}", flush=True)
            passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
