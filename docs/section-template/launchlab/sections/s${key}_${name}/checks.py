"""${title}: the kernel against its numpy reference (live)."""
import numpy as np

from launchlab.core.checks import check
from launchlab.sections.${folder} import lesson


@check("${key}", "${family}_scale-equals-numpy")
def _scale():
    import cupy as cp
    x = cp.asarray(np.random.default_rng(0).standard_normal(10_001).astype(np.float32))
    y = cp.empty_like(x)
    lesson.scale(x, y, 1.5, 7, 128)
    assert cp.asnumpy(y).tobytes() == lesson.reference(cp.asnumpy(x), 1.5).tobytes(), "bytes differ from numpy"
    return "byte-identical to numpy at grid 7, block 128"
