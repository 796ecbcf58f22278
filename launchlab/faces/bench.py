"""Benchmarks: ratios measured side by side in one run, never absolute numbers compared across runs.

    python -m launchlab bench stream    # §1: peak streaming read vs the copy ceiling; gate arms ABBA
    python -m launchlab bench rms       # §2: original vs widened apply ABBA per width; CuPy array ops
    python -m launchlab bench kda       # §3: grid = n_head vs value tiles ABBA; FLA's kernel beside them
    python -m launchlab bench mla       # §4: hardcoded vs derived split floor ABBA; PyTorch beside them
    python -m launchlab bench decode    # §6: the full-depth decode step, `main` preset vs the fixed defaults
    python -m launchlab bench pdl       # §2/§6: 327-norm graphs with and without PDL, ABBA; the chain's gaps
    python -m launchlab bench host      # the host's cost per launch: CuPy, checked, the chain path; the eager step

Everything here needs a GPU (live mode).
"""
from __future__ import annotations

import statistics

import numpy as np

from launchlab.core import gates, loader, mode, pdl, timing
from launchlab.kernels import decode, kda_decode, mla, rms_norm, stream_read
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s02_width import rmsnorm
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s04_derive import derive
from launchlab.sections.s06_one_binary import onebinary, pdlchain, stepprofile


def bench_stream() -> None:
    sr = stream_read.StreamRead()
    print("§1 streaming read vs device-to-device copy, interleaved (1 GiB, events, TB/s)")
    print(f"{'rep':>3} {'copy r+w':>10} {'read 4096x1024':>15} {'ratio':>7}")
    ratios = []
    for i in range(5):
        c = sr.copy_ceiling(reps=5)
        r = sr.time(4096, 1024, reps=5, vec=4, unroll=4)
        ct = stream_read.tb_per_s(2 * sr.nbytes, c.median)
        rt = stream_read.tb_per_s(sr.nbytes, r.median)
        ratios.append(rt / ct)
        print(f"{i:>3} {ct:>10.3f} {rt:>15.3f} {rt / ct:>7.3f}")
    print(f"median read/copy ratio: {statistics.median(ratios):.3f}\n")

    for grid, block in ((132, 256), (4096, 1024)):
        def arm(vec, unroll):
            def run():
                with gates.setting(STREAM_VEC=str(vec), STREAM_UNROLL=str(unroll)):
                    return sr.time(grid, block, reps=5)
            return run
        res = timing.abba(arm(1, 1), arm(4, 4), pairs=3,
                          labels=("baseline VEC=1 UNROLL=1", "default VEC=4 UNROLL=4"))
        print(f"gate arms at grid {grid}, block {block} (one build, ABBA; per-rep medians in us):")
        print(res.table())
        print(f"speed-up of the default arm: {1 / res.ratio():.2f}x\n")


def bench_rms() -> None:
    print("§2 RMS norm, 327 launches per CUDA graph, per-launch us (one build; ABBA per width)")
    for n in rmsnorm.WIDTHS:
        b = rms_norm.Bench(n)
        res = rmsnorm.abba(b)
        cu = b.time("cupy", reps=5)
        wide = statistics.median(res.medians("B"))
        print(f"n={n}:  " + "  ".join(f"{o}:{t.median:.3f}" for o, t in zip(res.order, res.results)))
        print(f"        widened/original = {res.ratio():.3f} ({1 - res.ratio():+.1%} time);  "
              f"CuPy array ops {cu.median:.3f} us = {cu.median / wide:.2f}x the widened kernel")


def bench_kda() -> None:
    print("§3 KDA decode step, K = V = 128, per step in a CUDA graph of 100 (us); one build, ABBA")
    for h in (12, 96):
        b = kda_decode.Bench(h)
        res = kda.abba(b)
        print(f"n_head={h}:  " + "  ".join(f"{o}:{t.median:.3f}" for o, t in zip(res.order, res.results)))
        print(f"        tiled speed-up {1 / res.ratio():.2f}x")
        try:
            f = kda.fla_peer(h)
            fla_us = statistics.median(f.timing.reps_us)
            tiled = statistics.median(res.medians("B"))
            print(f"        FLA fused_recurrent_kda {fla_us:.3f} us; ours/FLA = {tiled / fla_us:.2f}")
        except Exception as e:  # noqa: BLE001
            print(f"        FLA not measured: {type(e).__name__}: {e}")


def bench_mla() -> None:
    import cupy as cp
    ctx = derive.CTX
    print(f"§4 MLA split decode, 16 heads, ctx {ctx:,}, bf16 cache {ctx * mla.D * 2 / 1e6:.0f} MB (> the 60 MiB L2: "
          "cold; two copies alternate), per decode in a CUDA graph (us); one build, ABBA")
    sr = stream_read.StreamRead()
    copy = bandwidth.Ceiling(sr.copy_ceiling(reps=5), sr.nbytes).tbs
    d = mla.inputs(1, 16, ctx)
    q, kvs = cp.asarray(d["q"]), [cp.asarray(d["kv"]) for _ in range(2)]
    best = None
    for body in ("off", "cp.async"):
        ps = {fl: mla.plan(1, 16, ctx, fl, body) for fl in ("hardcoded", "derived")}
        arms = {fl: [mla.Decoder(q, kv, d["scale"], p) for kv in kvs] for fl, p in ps.items()}
        res = timing.abba(lambda: timing.graph_cold(arms["hardcoded"], launches=8, reps=10),
                          lambda: timing.graph_cold(arms["derived"], launches=8, reps=10), pairs=3)
        a, b = statistics.median(res.medians("A")), statistics.median(res.medians("B"))
        print(f"body {body}: " + "  ".join(f"{o}:{t.median:.2f}" for o, t in zip(res.order, res.results)))
        print(f"        hardcoded (grid {ps['hardcoded'].split.grid}) {a:.2f} us, derived (grid "
              f"{ps['derived'].split.grid}) {b:.2f} us: derived {a / b - 1:+.1%} faster (cold)")
        tbs = ps["derived"].bytes_moved() / (b * 1e-6) / 1e12
        if best is None or b < best[1]:
            best = (body, b, tbs)
    peer = derive.torch_peer(d)
    print(f"best: body {best[0]} {best[1]:.2f} us = {best[2]:.2f} TB/s = {best[2] / copy:.0%} of the copy ceiling "
          f"({copy:.2f} TB/s, same run)")
    print(f"PyTorch eager bf16 {peer.timing.median:.2f} us (cold, events) = {peer.timing.median / best[1]:.2f}x ours; "
          f"captured in a CUDA graph {peer.graph.median:.2f} us = {peer.graph.median / best[1]:.2f}x ours")


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
        print(f"  {name:<32} {statistics.median(xs):6.2f} us  ({statistics.median(xs) / base:4.2f}x CuPy's call; "
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
          f"({statistics.median(host) / nl * 1e3:.1f} us per launch, cuBLAS's included); the same step from a CUDA "
          f"graph {g.ms_per_token:.3f} ms per token (hot): eager is {statistics.median(host) / g.ms_per_token:.1f}x")


def main(what) -> int:
    mode.require_live("benchmarks")
    for w in what or ["stream"]:
        if w == "stream":
            bench_stream()
        elif w == "rms":
            bench_rms()
        elif w == "kda":
            bench_kda()
        elif w == "mla":
            bench_mla()
        elif w == "decode":
            bench_decode()
        elif w == "pdl":
            bench_pdl()
        elif w == "host":
            bench_host()
        else:
            print(f"unknown benchmark {w!r}; known: stream, rms, kda, mla, decode, pdl, host")
            return 2
    return 0
