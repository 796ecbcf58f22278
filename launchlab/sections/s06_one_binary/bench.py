"""§6's benchmarks (live): the full-depth decode step under main and fixed, the PDL chain, and the host's cost per launch."""
from __future__ import annotations

import statistics

import numpy as np

from launchlab.core import diagnosis, gates, loader, pdl, stepgraph, timing
from launchlab.kernels import decode
from launchlab.sections.s06_one_binary import onebinary, pdlchain, stepprofile


def bench_decode(layers: int = decode.FULL_LAYERS, ctx: int = onebinary.CTX, tokens: int = onebinary.EVAL_TOKENS) -> None:
    import time

    import cupy as cp
    t0 = time.perf_counter()
    m = decode.build(decode.Config(layers=layers), ctx=ctx, extra=tokens + 1)
    free, total = cp.cuda.runtime.memGetInfo()
    print(f"decode step, {layers} layers ({m.cfg.kinds.count('mla')} MLA + {m.cfg.kinds.count('kda')} KDA), "
          f"{m.cfg.norms_per_token} RMS norms per token, ctx {ctx:,} (synthetic: caches and states filled as if "
          f"prefilled); built in {time.perf_counter() - t0:.1f} s; device memory in use {(total - free) / 2**30:.1f} "
          f"GiB of {total / 2**30:.0f}")
    print(f"{tokens} tokens per CUDA graph; each rep = 3 replays; ms/token; one build, gates read at capture (ABBA)")
    main_, fixed = gates.preset("main"), gates.preset("fixed")
    ev = onebinary.GateRun("preset", "fixed", "main", onebinary.abba(m, fixed, main_, tokens, 3, 3, ("fixed", "main")))
    print("  " + "  ".join(f"{'fixed' if o == 'A' else 'main'}:{t.median / 1e3:.3f}" for o, t in
                           zip(ev.abba.order, ev.abba.results)))
    print(f"main {ev.main_ms:.3f} ms/token ({1e3 / ev.main_ms:.1f} tok/s), fixed {ev.fixed_ms:.3f} ms/token "
          f"({1e3 / ev.fixed_ms:.1f} tok/s): {onebinary.gain_pct(ev.main_ms, ev.fixed_ms):+.1f} % tok/s, "
          f"rep spread <= {ev.spread_ms:.3f} ms")
    print("each fix alone (A = fixed defaults, B = that one gate at main's value):")
    total_cost = ev.cost_ms
    for g in onebinary.DECODE_GATES:
        r = onebinary.GateRun(g, fixed[g], main_[g], onebinary.abba(m, fixed, dict(fixed, **{g: main_[g]}), tokens,
                                                                    3, 3))
        print(f"  {gates.PREFIX + g}={r.main:<10} +{r.cost_ms:7.3f} ms/token  ({r.cost_ms / total_cost:6.1%} of "
              f"main - fixed)   reps A " + "/".join(f"{x:.3f}" for x in r.ms("A")) + "  B "
              + "/".join(f"{x:.3f}" for x in r.ms("B")))
    with gates.setting(**main_):
        p = stepprofile.profile(m, ctx, reps=10, preset="main")
    print(f"under main, the kernels the planted gates change (every RMS norm, the KDA step, the MLA split) take "
          f"{p.share(onebinary.planted):.1%} of the step (profile sum {p.sum_us / 1e3:.3f} ms vs graph "
          f"{p.step_us / 1e3:.3f} ms, {p.agreement:+.1%})")


def bench_pdl() -> None:
    """The norm chain on the decode chain's path, PDL against plain (both through cuLaunchKernelEx), and the
    gaps of a shorter chain with one launch opted out (the step's ABBA is `record pdl`'s: minutes at depth)."""
    d = pdlchain.PDLData(pdlchain.N, [pdlchain.norm_chain(a, b) for a, b in pdlchain.NORM_ARMS],
                         [pdlchain.timeline("plain", False), pdlchain.timeline("PDL", True),
                          pdlchain.timeline(f"PDL, launch {pdlchain.OPT_OUT_AT} opted out", True, pdlchain.OPT_OUT_AT)],
                         0, 0, {}, {}, {}, [], source="live")
    print(pdlchain.norm_table(d))
    print(pdlchain.timeline_table(d))


def bench_host(launches: int = 2000, reps: int = 5, ctx: int = onebinary.SHORT_CTX) -> None:
    """What a launch costs the host (the eager decode step issues ~1,700 of them): CuPy's own call, the course's
    checked launch, and the decode chain's cuLaunchKernelEx path with and without the PDL attribute, on one
    tiny kernel, the arms interleaved rep by rep; then the eager step's host time against its graph replay."""
    import time

    import cupy as cp
    n = 256
    h, a = cp.zeros(n, cp.float32), cp.ones(n, cp.float32)
    k = loader.kernel(decode.FAMILY, "add_inplace")
    args = (h, a, np.int32(n))

    def cupy_call():
        k.raw((1,), (n,), args)

    def checked():
        k.launch((1,), n, args)

    def chain(attr):
        def go():
            with pdl.chain(), gates.setting(PDL=attr):
                for _ in range(launches):
                    k.launch((1,), n, args)
        return go
    arms = {"CuPy RawKernel call": lambda: [cupy_call() for _ in range(launches)],
            "Kernel.launch (checked, CuPy)": lambda: [checked() for _ in range(launches)],
            "chain path, PDL=0": chain("0"), "chain path, PDL=1": chain("1")}
    per: dict[str, list[float]] = {name: [] for name in arms}
    for name, fn in arms.items():             # warm: modules loaded, configs built
        fn()
    cp.cuda.Device().synchronize()
    for _ in range(reps):
        for name, fn in arms.items():
            t0 = time.perf_counter()
            fn()
            per[name].append((time.perf_counter() - t0) / launches * 1e6)
            cp.cuda.Device().synchronize()
    base = statistics.median(per["CuPy RawKernel call"])
    print(f"host time per launch, {launches} launches of a 1-block kernel per rep, {reps} reps interleaved (median)")
    for name, xs in per.items():
        print(f"  {name:<32} {statistics.median(xs):6.2f} µs  ({statistics.median(xs) / base:4.2f}x CuPy's call; "
              f"reps {min(xs):.2f}-{max(xs):.2f})")
    m = decode.build(decode.Config(), ctx=ctx, extra=reps + 2)
    nl = len(m.launches(ctx))
    host = []
    for i in range(reps):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        m.step(ctx + 1 + i)
        host.append((time.perf_counter() - t0) * 1e3)
    cp.cuda.Device().synchronize()
    g = onebinary.eval_step(m, tokens=4, reps=3)
    print(f"eager decode step, ctx {ctx:,}: {nl} launches, host {statistics.median(host):.1f} ms per step "
          f"({statistics.median(host) / nl * 1e3:.1f} µs per launch, cuBLAS's included); the same step from a CUDA "
          f"graph {g.ms_per_token:.3f} ms per token (hot): eager is {statistics.median(host) / g.ms_per_token:.1f}x")


def _state_digest(m: "decode.Model", positions: list[int]) -> str:
    """sha256 of what the steps leave: the logits, the next token, every KDA state and every MLA cache row the
    steps wrote."""
    import hashlib

    import cupy as cp
    h = hashlib.sha256()
    for x in (m.buf["logits"], m.buf["token"], *(m.state["kda"][i] for i in sorted(m.state["kda"])),
              *(m.state["mla"][i][0, positions[0]:positions[-1] + 1] for i in sorted(m.state["mla"]))):
        h.update(cp.asnumpy(x).tobytes())
    return h.hexdigest()


def _fresh(m: "decode.Model", saved: dict, positions: list[int]) -> None:
    """Back to `saved`, with the MLA cache rows the steps will write zeroed (so a graph that skipped one shows)."""
    m.restore(saved)
    for i in m.state["mla"]:
        m.state["mla"][i][0, positions[0]:positions[-1] + 1] = 0


def bench_step_graph(tokens: int = 24, ctx: int = onebinary.SHORT_CTX, pairs: int = 3, reps: int = 3) -> None:
    """The graph of `tokens` decode steps built two ways on one full-depth model (launchlab.core.stepgraph):
    every step captured (LAUNCHLAB_STEP_GRAPH=every, the baseline) and one step captured and patched at every
    position (once). Prints the host seconds each build takes, whether each graph's replay leaves the bytes the
    eager steps leave, and both graphs replayed ABBA (ms/token, hot)."""
    import os
    import time

    import cupy as cp
    m = decode.build(decode.Config(), ctx=ctx, extra=tokens + 2)
    positions = list(range(ctx, ctx + tokens))
    onebinary._warm(m, positions)
    saved = m.save()
    _fresh(m, saved, positions)
    for p in positions:
        m.step(p)
    eager = _state_digest(m, positions)
    built, digest, graphs = {}, {}, {}
    before = os.environ.get(stepgraph.ENV)
    try:
        for how in stepgraph.CHOICES[::-1]:              # every (the baseline) first, then once
            os.environ[stepgraph.ENV] = how
            m.restore(saved)
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            g, stream = m.graph(positions)
            built[how] = time.perf_counter() - t0
            _fresh(m, saved, positions)
            g.launch(stream)
            stream.synchronize()
            digest[how] = _state_digest(m, positions)
            graphs[how] = g, stream
    finally:
        if before is None:
            os.environ.pop(stepgraph.ENV, None)
        else:
            os.environ[stepgraph.ENV] = before

    def rep(how):
        g, stream = graphs[how]
        return lambda: timing.Timing(timing._replay(g, stream, tokens, reps, 1), "graph", tokens, how)
    ab = timing.abba(rep("every"), rep("once"), pairs, ("every", "once"))
    med = {how: statistics.median(t.median for t in ab.arm("A" if how == "every" else "B")) / 1e3
           for how in ("every", "once")}
    spread = {how: diagnosis.robust_spread([t.median for t in ab.arm("A" if how == "every" else "B")])
              for how in ("every", "once")}
    print(f"graph of {tokens} decode steps at ctx {ctx:,}, {m.cfg.layers} layers; ABBA {pairs} pairs of {reps} "
          f"replays (hot L2)")
    print(f"{'built':<8} {'host s':>7} {'bytes vs eager':>15} {'ms/token':>9} {'spread':>7}")
    for how in ("every", "once"):
        print(f"{how:<8} {built[how]:7.2f} {'identical' if digest[how] == eager else 'DIFFERENT':>15} "
              f"{med[how]:9.4f} {spread[how]:7.2%}")
    print(f"once / every: build {built['once'] / built['every']:.3f}x, replay {med['once'] / med['every']:.4f}x")
