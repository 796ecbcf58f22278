"""Small MLA decodes for compute-sanitizer (memcheck, racecheck, initcheck): every split body, a ragged tail,
a partial head tile, forced splits, batch 2, and the combine's skip engaged.

    compute-sanitizer --tool racecheck python3 tools/mla_sanitize.py
"""
import cupy as cp

from launchlab.kernels import mla

for body in mla.BODIES:
    for (b, h, ctx, kw) in ((1, 16, 3000, {"n_splits": 5}), (1, 20, 9000, {}), (2, 16, 10_001, {"floor": "hardcoded"}),
                            (1, 16, 20_000, {"skip": "on"})):
        d = mla.inputs(b, h, ctx) if "skip" not in kw else mla.inputs_recent(b, h, ctx)
        o, p = mla.decode(cp.asarray(d["q"]), cp.asarray(d["kv"]), d["scale"], pipeline=body, **kw)
        cp.cuda.Device().synchronize()
        ref = mla.reference(d["q"], d["kv"], d["scale"])
        r = mla.max_error_over_bound(cp.asnumpy(o), ref, mla.error_bound(d["q"], d["kv"], d["scale"], p))
        print(f"{body:<10} batch {b} heads {h} ctx {ctx} {kw}: {p.split.splits} splits, error/bound {r:.4f}")
