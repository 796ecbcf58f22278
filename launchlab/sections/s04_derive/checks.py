"""§4's self-test checks: the MLA split decode against its float64 reference, within the proven bound, and its refusals."""
from __future__ import annotations

from launchlab.core.checks import check
from launchlab.kernels import mla

# ------------------------------------------------------------------ §4 / §8 MLA split decode
for _body in mla.BODIES:
    for _shape in ((1, 16, 3000, {"n_splits": 5}), (1, 20, 9000, {}), (2, 16, 10_001, {"floor": "hardcoded"})):
        @check("04", f"mla-{_body}-b{_shape[0]}-h{_shape[1]}-ctx{_shape[2]}" + "".join(f"-{v}" for v in _shape[3].values()))
        def _mla(body=_body, shape=_shape):
            import cupy as cp
            b, h, ctx, kw = shape
            d = mla.inputs(b, h, ctx, seed=5)
            out, p = mla.decode(cp.asarray(d["q"]), cp.asarray(d["kv"]), d["scale"], pipeline=body, **kw)
            ref = mla.reference(d["q"], d["kv"], d["scale"])
            r = mla.max_error_over_bound(cp.asnumpy(out), ref, mla.error_bound(d["q"], d["kv"], d["scale"], p))
            assert r <= 1.0, f"error {r:.2f} x the proven bound"
            return f"{p.split.splits} splits, error {r:.3f} x the bound"


for _bad in (dict(n_splits=2000), dict(pipeline="tma"), dict(resident=3)):
    @check("04", "mla-refuses-" + "-".join(f"{k}{v}" for k, v in _bad.items()))
    def _mla_refuse(bad=_bad):
        try:
            mla.plan(1, 16, 131_072, **bad)
        except mla.MLAError as e:
            return str(e)[:50]
        raise AssertionError(f"mla.plan accepted {bad}")
