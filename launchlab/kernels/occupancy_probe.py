"""kernels/occupancy_probe.cu's host side: one body compiled at many register caps and static shared-memory
sizes (sources.FAMILIES, in parts), its bit-exact numpy reference, and a check that every variant gives the
reference's bytes. The §1 lesson that asks the driver about them is
launchlab.sections.s01_arithmetic.driver_occupancy."""
from __future__ import annotations

import numpy as np

from launchlab.core import loader, mode, sources

FAMILY = "occupancy_probe"
NV = 200                     # values each thread keeps live: what spills at low register caps


def reference(x: np.ndarray, n: int) -> np.ndarray:
    """Bit-exact numpy float32 version of the probe body for threads 0..n-1 (its products by 0.5 and 0.25
    are exact, so the kernel's fmaf rounds exactly as numpy's add does)."""
    x = np.asarray(x, dtype=np.float32)
    t = np.arange(n)
    v = [x[(j * 131 + t) % n] for j in range(NV)]
    half, quarter = np.float32(0.5), np.float32(0.25)
    for _ in range(2):
        for j in range(NV):
            v[j] = v[j] * half + v[(j + 1) % NV] * quarter
    acc = np.zeros(n, dtype=np.float32)
    for j in range(NV):
        acc = acc + v[j]
    return acc


def check_probe_outputs(n: int = 4096) -> dict:
    """Launch every variant; all must give the same bytes, and those bytes must equal the numpy reference."""
    mode.require_live("launching the occupancy probe")
    import cupy as cp

    x = cp.random.default_rng(7).random(n, dtype=cp.float32)
    ref = reference(cp.asnumpy(x), n)
    out = cp.empty(n, dtype=cp.float32)
    verdict = {}
    for e in sources.FAMILIES[FAMILY]:
        k = loader.kernel(FAMILY, e)
        block = min(256, k.max_threads_per_block)
        out.fill(np.nan)
        k.launch(-(-n // block), block, (x, out, np.int32(n)))
        got = cp.asnumpy(out)
        verdict[e] = bool(got.tobytes() == ref.tobytes())
    return verdict
