"""kernels/fma_forms.cu and kernels/fma_forms_strict.cu's host side: `a * b + c` written three ways (FORMS),
built with -fmad=true and, in the strict file alone, -fmad=false (BUILDS); their numpy references, one
rounding (`fused`, bit-exact through launchlab.core.floatbits.fma32) or two (`separate`); and `run`, one
form on the GPU. Which form the compiler fused is read from the SASS by the §7.1 lesson,
launchlab.sections.s07_bit_identity.fmatrap."""
from __future__ import annotations

import numpy as np

from launchlab.core import floatbits, loader, mode

FORMS = {"tmp": "float tmp = a * b; out = tmp + c;", "inline": "out = a * b + c;",
         "rn": "out = __fmul_rn(a, b) + c;"}
BUILDS = {"fma_forms": ("fma", "-fmad=true (the default)"), "fma_forms_strict": ("strict", "-fmad=false, one file")}


def inputs(n: int = 1 << 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a, b, c ~ N(0, 1) in float32: products and sums of one scale, where a second rounding shows."""
    r = np.random.default_rng(seed)
    return tuple(r.standard_normal(n).astype(np.float32) for _ in range(3))


def fused(a, b, c) -> np.ndarray:
    return floatbits.fma32(a, b, c)


def separate(a, b, c) -> np.ndarray:
    """Two roundings: the float32 product, then the float32 sum (numpy rounds each float32 operation as CUDA)."""
    a, b, c = (np.asarray(v, dtype=np.float32) for v in (a, b, c))
    return (a * b) + c


def run(family: str, kernel: str, a, b, c) -> np.ndarray:
    """Live: one form's kernel over a, b, c on the GPU (grid from the length, 256 threads); its output."""
    mode.require_live("running the FMA forms")
    import cupy as cp
    n = a.size
    out = cp.empty(n, dtype=cp.float32)
    loader.kernel(family, kernel).launch((-(-n // 256),), 256, (cp.asarray(a), cp.asarray(b), cp.asarray(c),
                                                              out, np.int32(n)))
    return cp.asnumpy(out)
