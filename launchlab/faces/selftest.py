"""Every kernel against its numpy reference, on small inputs (live), as named checks.

    python -m launchlab selftest            # all checks in one process (what compute-sanitizer runs)
    pytest tests/test_gpu_kernels.py        # the same checks, one parametrized GPU test per id

A check is a function that returns a short message and raises AssertionError when the kernel is wrong.
Checks are grouped by section; inputs are small enough that the whole set runs under compute-sanitizer
in seconds. Shared GPU fixtures (a 64 MiB buffer, the wave kernels) are made once per process.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from launchlab.core import launch, loader, mode, timeline
from launchlab.kernels import kda_decode, mla, rms_norm, stream_read, waves
from launchlab.sections.s01_arithmetic import occupancy_probe
from launchlab.sections.s02_width import rmsnorm
from launchlab.sections.s03_starvation import kda

TOL = 1e-5


@dataclass(frozen=True)
class Check:
    id: str
    section: str
    fn: Callable[[], str]

    def run(self) -> str:
        mode.require_live("the kernel self-test")
        return self.fn()


CHECKS: list[Check] = []


def check(section: str, id_: str):
    def deco(fn):
        CHECKS.append(Check(id_, section, fn))
        return fn
    return deco


@functools.cache
def _reader() -> "stream_read.StreamRead":
    return stream_read.StreamRead(nbytes=1 << 24)


@functools.cache
def _wave_kernels() -> "waves.WaveKernels":
    return waves.WaveKernels(max_grid=64)


def _below(err: float, tol: float) -> str:
    assert err < tol, f"max rel err {err:.2e} >= {tol:.0e}"
    return f"max rel err {err:.2e}"


# ------------------------------------------------------------------ §1 streaming read
for _vec, _unroll in stream_read.VARIANTS:
    for _grid, _block in ((1, 128), (37, 256), (300, 1024)):
        check("01", f"stream_read<{_vec},{_unroll}>-grid{_grid}-block{_block}")(
            lambda v=_vec, u=_unroll, g=_grid, b=_block: _below(_reader().check_reference(g, b, v, u, n=1 << 18), TOL))


@check("01", "stream_read-misaligned-view-refused-then-works")
def _misaligned():
    sr = _reader()
    try:
        sr.launch(4, 256, sr.x[1:1 + 4096], vec=4, unroll=4)
    except launch.LaunchError as e:
        msg = str(e)[:60]
    else:
        raise AssertionError("a misaligned float4 view launched")
    _below(sr.check_reference(8, 256, 4, 4, n=1 << 16), TOL)
    return f"refused ({msg}...), then correct"


for _bad in ((0, 256), (4, 0), (4, 2048), (4, 100.5)):
    @check("01", f"stream_read-refuses-grid{_bad[0]}-block{_bad[1]}")
    def _refuse(bad=_bad):
        try:
            _reader().launch(*bad)
        except launch.LaunchError as e:
            return f"LaunchError: {str(e)[:50]}"
        raise AssertionError(f"grid/block {bad} launched")


# ------------------------------------------------------------------ §1 waves and the occupancy probe
@check("01", "waves-fixed_work")
def _fixed_work():
    # 1000 chained float32 FMAs against a float64 reference: ~1000 roundings of 2^-24 at most (6e-5)
    return _below(_wave_kernels().check_references()["fixed_work"], 1e-4)


@check("01", "waves-fixed_bytes")
def _fixed_bytes():
    return _below(_wave_kernels().check_references()["fixed_bytes"], TOL)


@check("01", "timeline-stamped-stream_read-sums-like-numpy-and-stamps-every-block")
def _stamped_stream():
    import cupy as cp
    sr = _reader()
    xs = sr.x[: 1 << 18]
    k = loader.kernel(stream_read.FAMILY, "stream_read_timeline<4, 4>")
    sr.partial[:37] = np.nan
    t = timeline.capture(stream_read.FAMILY, lambda: k.launch(37, 256, (xs, np.int64(xs.size // 4), sr.partial)), 37,
                         256, "check")
    got = cp.asnumpy(sr.partial[:37]).astype(np.float64)
    ref = stream_read.reference_partials(cp.asnumpy(xs), 37, 256, 4)
    _below(float(np.max(np.abs(got - ref) / np.abs(ref))), TOL)
    assert t.sms_with_work == 37 and all(e >= s_ for s_, e in zip(t.start_ns, t.end_ns)), t.sm
    return f"37 blocks on {t.sms_with_work} SMs, span {t.span_ns} ns"


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


@check("01", "timeline-globaltimer-ticks")
def _ticks():
    r = timeline.resolution(64)
    assert r.min_ns > 0 and r.tick_ns < 2000, r.gaps_ns[:8]
    return f"median gap {r.tick_ns:.0f} ns, smallest {r.min_ns} ns"


@check("01", "occupancy_probe-every-variant-bytes-equal-numpy")
def _probe():
    res = occupancy_probe.check_probe_outputs(n=2048)
    bad = [k for k, ok in res.items() if not ok]
    assert not bad, f"differs from numpy: {bad}"
    return f"{len(res)} variants byte-identical"


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
        return _below(max(c.max_rel_err_vs_float64.values()), TOL)

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
        buf = _wave_kernels().out[:16]
        try:
            rms_norm.rms_norm(buf, buf, **kw)
        except rms_norm.RMSNormError as e:
            return str(e)[:50]
        raise AssertionError(f"rms_norm launched with {kw}")


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


for _bad in (dict(n_splits=2000), dict(pipeline="tma"), dict(resident=3)):
    @check("04", "mla-refuses-" + "-".join(f"{k}{v}" for k, v in _bad.items()))
    def _mla_refuse(bad=_bad):
        try:
            mla.plan(1, 16, 131_072, **bad)
        except mla.MLAError as e:
            return str(e)[:50]
        raise AssertionError(f"mla.plan accepted {bad}")


def run() -> dict[str, tuple[bool, str]]:
    """Every check in this process: {id: (passed, message)}."""
    res = {}
    for c in CHECKS:
        try:
            res[c.id] = (True, c.run())
        except AssertionError as e:
            res[c.id] = (False, str(e))
    return res


def main() -> int:
    res = run()
    width = max(len(k) for k in res)
    for k, (ok, msg) in sorted(res.items(), key=lambda kv: kv[1][0], reverse=True):   # failures last
        print(f"{'ok  ' if ok else 'FAIL'} {k:<{width}}  {msg}")
    bad = [k for k, (ok, _) in res.items() if not ok]
    print(f"{len(res) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0
