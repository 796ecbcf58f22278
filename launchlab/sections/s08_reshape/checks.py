"""§8's self-test checks: the split-skip approximation inert at or below its threshold and engaged past it."""
from __future__ import annotations

from launchlab.core.checks import check
from launchlab.kernels import mla


@check("08", "mla-skip-inert-at-16384-engaged-past-it")
def _mla_skip():
    import cupy as cp
    out = []
    for ctx in (16_384, 20_000):
        d = mla.inputs_recent(1, 16, ctx)
        q, kv = cp.asarray(d["q"]), cp.asarray(d["kv"])
        a = cp.asnumpy(mla.decode(q, kv, d["scale"], skip="off")[0])
        b = cp.asnumpy(mla.decode(q, kv, d["scale"], skip="on")[0])
        out.append(a.tobytes() == b.tobytes())
    assert out[0], "the skip changed bytes at 16,384 tokens"
    return f"identical at 16,384: {out[0]}; at 20,000: {out[1]}"
