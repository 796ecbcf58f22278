"""What the live course's heavy pieces cost, each timed once on its own (wall seconds, GPU synchronized): the
device door's compile of every family (cold, then warm), building the full-depth model, eager steps and a
graph capture at both contexts, one §7 compare, §2's identity and timing for one width, a step profile, §6's
ncu checks. A cost model for cutting the live course's time (issue 14), not a benchmark.

    python tools/phase_times.py [PHASE ...]   (on a GPU; phases run in the order given)
"""
from __future__ import annotations

import sys
import time

from launchlab.core import gates, loader
from launchlab.kernels import decode, rms_norm
from launchlab.sections.s00_start import instruments
from launchlab.sections.s02_width import rmsnorm
from launchlab.sections.s06_one_binary import onebinary, stepprofile
from launchlab.sections.s07_bit_identity import identity


def _sync():
    import cupy as cp
    cp.cuda.Device().synchronize()


def main(argv=None) -> int:
    import cupy as cp
    names = (argv if argv is not None else sys.argv[1:]) or ["compile", "compile_again", "build", "steps",
                                                            "rms", "compare", "profile", "ncu"]
    rows = []

    def phase(name, fn):
        t0 = time.perf_counter()
        try:
            extra = fn()
            _sync()
            err = ""
        except Exception as e:  # keep going: the table says which failed
            extra, err = "", f"{type(e).__name__}: {str(e)[:160]}"
        rows.append((name, time.perf_counter() - t0, extra or err))
        print(f"{name:<34} {rows[-1][1]:8.2f} s  {rows[-1][2]}", flush=True)

    main_gates = gates.preset("main")
    models = {}
    for n in names:
        if n == "compile":
            phase("device door (cold compile)", lambda: instruments.DOOR.measure() and "")
        elif n == "compile_again":
            phase("load_all again (cached)", lambda: f"{loader.load_all():.2f} s inside")
        elif n == "build":
            for ctx in (onebinary.SHORT_CTX, onebinary.CTX):
                phase(f"build ctx {ctx:,}", lambda ctx=ctx: models.__setitem__(
                    ctx, decode.build(decode.Config(), ctx=ctx, extra=40)))
        elif n == "steps":
            for ctx, m in models.items():
                with gates.setting(**main_gates):
                    m.step(ctx)
                    _sync()
                    phase(f"10 eager steps ctx {ctx:,}", lambda m=m, ctx=ctx: [m.step(ctx + i) for i in range(10)]
                          and "")
                    phase(f"capture 8 steps ctx {ctx:,}", lambda m=m, ctx=ctx: m.graph(list(range(ctx, ctx + 8)))
                          and "")
                    g, s = m.graph(list(range(ctx, ctx + 8)))
                    phase(f"replay 8 steps x3 ctx {ctx:,}", lambda g=g, s=s: [g.launch(s) for _ in range(3)]
                          and s.synchronize())
        elif n == "rms":
            phase("rms compare_rows 7168 x 10000", lambda: rmsnorm.compare_rows(7168, 10000) and "")
            phase("rms time_width 7168", lambda: rmsnorm.time_width(7168) and "")
            phase("rms abba 7168", lambda: rmsnorm.abba(rms_norm.Bench(7168)) and "")
            phase("rms in_flight 7168", lambda: rmsnorm.in_flight(7168) and "")
        elif n == "compare":
            models.clear()
            cp.get_default_memory_pool().free_all_blocks()
            fixed = gates.preset("fixed")
            phase("identity.compare ctx 131,072 (2 pos)", lambda: identity.compare(
                "x", onebinary.CTX, main_gates, dict(main_gates, KDA_VT=fixed["KDA_VT"]), decode.Config(), 2) and "")
        elif n == "profile":
            m = decode.build(decode.Config(), ctx=onebinary.CTX, extra=4)
            with gates.setting(**main_gates):
                phase("stepprofile ctx 131,072 reps 10", lambda: stepprofile.profile(m, onebinary.CTX, 10) and "")
            del m
            cp.get_default_memory_pool().free_all_blocks()
        elif n == "ncu":
            phase("onebinary.ncu_checks", lambda: f"{len(onebinary.ncu_checks())} rows")
    print(f"\n{'phase':<34} {'seconds':>8}")
    for name, s, _ in rows:
        print(f"{name:<34} {s:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
