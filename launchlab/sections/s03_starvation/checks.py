"""§3's self-test checks: every KDA variant against the numpy step, the stamped twin, and its refusals."""
from __future__ import annotations

import functools

from launchlab.core import timeline
from launchlab.core.checks import check
from launchlab.kernels import kda_contrast, kda_decode
from launchlab.sections.s03_starvation import kda


@check("03", "timeline-kda-main-runs-on-12-sms-and-matches-its-unstamped-bytes")
def _stamped_kda():
    b = kda_decode.Bench(12)
    o_plain, s_plain = b.one_step(kda_decode.V, "store", "walk")
    b.state[...] = b.state0
    t = timeline.capture(kda_decode.FAMILY, lambda: kda_decode.step(b.q, b.k, b.vv, b.g, b.beta, b.state, b.o, b.scratch, kda_decode.V,
                                                      "store", "walk", timeline=True), 12, 128, "check")
    import cupy as cp
    assert cp.asnumpy(b.state).tobytes() == s_plain.tobytes() and cp.asnumpy(b.o).tobytes() == o_plain.tobytes()
    assert t.sms_with_work == 12, t.sm
    return f"12 blocks on 12 SMs, byte-identical to the unstamped kernel, span {t.span_ns} ns"


# ------------------------------------------------------------------ §3 KDA decode
@functools.cache
def _kda_compare():
    return kda.compare(12, seed=3)


for _name in [kda.variant_name(b, bv, m) for b in kda_decode.BODIES for bv in (kda_decode.V, kda_decode.BV_TILED) for m in kda_decode.MODES]:
    @check("03", "kda-" + _name.replace("=", "").replace(" ", "-"))
    def _kda_variant(name=_name):
        r = _kda_compare().variants[name]
        want_identical = r.mode != "fma"
        assert r.identical_to_baseline == want_identical, f"identical={r.identical_to_baseline}"
        assert r.rel_err_o < 1e-5 and r.rel_err_state < 1e-5, (r.rel_err_o, r.rel_err_state)
        return f"identical={r.identical_to_baseline} err o {r.rel_err_o:.1e} state {r.rel_err_state:.1e}"


for _bad in (dict(bv=24), dict(bv=256), dict(mode_="x"), dict(body="x")):
    @check("03", "kda-refuses-" + "-".join(f"{k}{v}" for k, v in _bad.items()))
    def _kda_refuse(bad=_bad):
        try:
            kda_decode.plan(12, 128, **bad)
        except kda_decode.KDAError as e:
            return str(e)[:50]
        raise AssertionError(f"kda_decode.plan accepted {bad}")


# ------------------------------------------------------------------ §3's contrast kernel (the lecture's shape)
@check("03", "kda-contrast-matches-the-float64-step")
def _contrast_vs_reference():
    b = kda_contrast.Bench(12, seed=5)
    o, s = b.one_step(None, None)
    ref_o, ref_s = kda_contrast.reference(**b.host)
    eo, es = kda_decode.rel_err(o, ref_o), kda_decode.rel_err(s, ref_s)
    assert eo < 1e-5 and es < 1e-5, (eo, es)
    return f"12 blocks of 128 threads, one column each: err o {eo:.1e} state {es:.1e}"
