"""§2's self-test checks: the RMS norm's arms byte-identical, against float64 and the bit-exact emulation, the chain and the fallbacks."""
from __future__ import annotations

import functools

from launchlab.core.checks import TOL, below, check
from launchlab.kernels import rms_norm
from launchlab.sections.s01_arithmetic.checks import wave_kernels
from launchlab.sections.s02_width import rmsnorm


# ------------------------------------------------------------------ §2 RMS norm
@functools.cache
def _rms_compare(n: int):
    return rmsnorm.compare_rows(n, 48, keep=0)


for _n in (2048, 7168, 7166):
    @check("02", f"rms_norm-n{_n}-widened-apply-byte-identical")
    def _wide_identical(n=_n):
        c = _rms_compare(n)
        assert c.wide_identical, "widened apply differs from the original"
        return c.plans["wide"].expr

    @check("02", f"rms_norm-n{_n}-every-arm-vs-float64")
    def _vs_float64(n=_n):
        c = _rms_compare(n)
        return below(max(c.max_rel_err_vs_float64.values()), TOL)

    @check("02", f"rms_norm-n{_n}-emulation-reproduces-ss-bits")
    def _emulation(n=_n):
        c = _rms_compare(n)
        assert c.emulation_ss_matches_gpu == {"narrow": 48, "wide": 48}, c.emulation_ss_matches_gpu
        return "48/48 rows, both reductions"


for _n in (2048, 7168, 7166):
    @check("02", f"rms_norm-n{_n}-one-load-in-flight-twins-byte-identical")
    def _rms_chain(n=_n):
        c = _rms_compare(n)
        assert c.chain_identical, "a #pragma unroll 1 twin changed the bytes"
        return "original_chain and wide_chain == original"


@check("02", "rms_norm-fallbacks-byte-identical")
def _fallbacks():
    fb = rmsnorm.fallback_checks(count=8)
    bad = [(f.n, f.offset_floats) for f in fb if not f.identical]
    assert not bad, f"fallback differs at {bad}"
    return ", ".join(f"{f.n}+{f.offset_floats}:{f.expr}" for f in fb)


for _kw in (dict(eps=-1.0), dict(n=0)):
    @check("02", "rms_norm-refuses-" + "-".join(f"{k}{v}" for k, v in _kw.items()))
    def _rms_refuse(kw=_kw):
        buf = wave_kernels().out[:16]
        try:
            rms_norm.rms_norm(buf, buf, **kw)
        except rms_norm.RMSNormError as e:
            return str(e)[:50]
        raise AssertionError(f"rms_norm launched with {kw}")
