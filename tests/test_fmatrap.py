"""§7.1 the FMA trap: the SASS of the three forms in both builds (any machine), and the GPU's bytes (gpu)."""
import numpy as np
import pytest

from launchlab.core import floatbits, mode
from launchlab.sections.s07_bit_identity import fmatrap
from launchlab.kernels import fma_forms


def test_the_compiler_contracts_the_separate_statement_and_not_the_rounded_product():
    t = {(f.family, f.form): f for f in fmatrap.sass_table()}
    assert t["fma_forms", "tmp"].fused and t["fma_forms", "inline"].fused          # the trap: tmp = a*b too
    assert not t["fma_forms", "rn"].fused and (t["fma_forms", "rn"].fmul, t["fma_forms", "rn"].fadd) == (1, 1)
    assert not any(t["fma_forms_strict", f].fused for f in fma_forms.FORMS)        # -fmad=false, one file
    assert all(t["fma_forms_strict", f].ffma == 0 for f in fma_forms.FORMS)


def test_one_rounding_against_two_differs_in_bytes_but_passes_a_tolerance():
    a, b, c = fma_forms.inputs(1 << 14)
    fu, se = fma_forms.fused(a, b, c), fma_forms.separate(a, b, c)
    n = fmatrap.differ(a, b, c)
    assert 0.01 * a.size < n < 0.5 * a.size                                       # often, never always
    ref = a.astype(np.float64) * b + c
    assert np.allclose(fu, ref, rtol=1e-6, atol=1e-6) and np.allclose(se, ref, rtol=1e-6, atol=1e-6)
    assert np.max(floatbits.ulp_distance(fu, se)) >= 1


@pytest.mark.gpu
@pytest.mark.skipif(not mode.is_live(), reason="needs a GPU")
def test_each_kernel_gives_the_bytes_its_sass_predicts():
    a, b, c = fma_forms.inputs(1 << 16, seed=4)
    for f in fmatrap.sass_table():
        got = fmatrap.run(f, a, b, c)
        assert np.array_equal(floatbits.bits(got), floatbits.bits(fmatrap.expected(f, a, b, c))), f
