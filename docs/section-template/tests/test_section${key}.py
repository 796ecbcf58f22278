"""${title}: the reference, the compiled kernel and the recorded figures (no GPU needed)."""
import numpy as np
import pytest

from launchlab.core import compiler
from launchlab.sections.${folder} import lesson

# ptxas's resource report is parsed from the log of the NVRTC the course pins (13.5); an older NVRTC (a GPU
# image's own) may print none, and live code reads the driver's attributes instead (tests/test_kernels.py)
needs_pinned_nvrtc = pytest.mark.skipif(compiler.nvrtc_version() < (13, 5),
                                        reason="offline resource report needs the pinned NVRTC 13.5")


def test_the_reference_scales():
    x = np.arange(5, dtype=np.float32)
    assert lesson.reference(x, 2.0).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]


@needs_pinned_nvrtc
def test_the_kernel_compiles_offline_with_its_resources():
    r = compiler.compile_offline(lesson.FAMILY).resources_of(lesson.EXPR)
    assert 0 < r.registers <= 255 and r.spill_stores == 0


def test_the_recording_holds_every_block_size():
    r = lesson.recorded()
    assert r.blocks == list(lesson.BLOCKS) and len(r.blocks_per_sm) == len(r.blocks)
    assert lesson.headline(r)["blocks_per_sm_block256"] >= 1
