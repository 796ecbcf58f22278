"""§4's benchmark (live): the hardcoded against the derived split floor, ABBA; PyTorch beside them."""
from __future__ import annotations

import statistics

from launchlab.core import timing
from launchlab.kernels import mla, stream_read
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s04_derive import derive


def bench_mla() -> None:
    import cupy as cp
    ctx = derive.CTX
    print(f"§4 MLA split decode, 16 heads, ctx {ctx:,}, bf16 cache {ctx * mla.D * 2 / 1e6:.0f} MB (> the 60 MiB L2: "
          "cold; two copies alternate), per decode in a CUDA graph (µs); one build, ABBA")
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
        print(f"        hardcoded (grid {ps['hardcoded'].split.grid}) {a:.2f} µs, derived (grid "
              f"{ps['derived'].split.grid}) {b:.2f} µs: derived {a / b - 1:+.1%} faster (cold)")
        tbs = ps["derived"].bytes_moved() / (b * 1e-6) / 1e12
        if best is None or b < best[1]:
            best = (body, b, tbs)
    peer = derive.torch_peer(d)
    print(f"best: body {best[0]} {best[1]:.2f} µs = {best[2]:.2f} TB/s = {best[2] / copy:.0%} of the copy ceiling "
          f"({copy:.2f} TB/s, same run)")
    print(f"PyTorch eager bf16 {peer.timing.median:.2f} µs (cold, events) = {peer.timing.median / best[1]:.2f}x ours; "
          f"captured in a CUDA graph {peer.graph.median:.2f} µs = {peer.graph.median / best[1]:.2f}x ours")
