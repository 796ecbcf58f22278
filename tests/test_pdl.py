"""The decode chain's launch path (launchlab.core.pdl): where every chain kernel waits, read from its SASS (any
machine); PDL launches byte-identical to plain ones, a misplaced wait caught by a byte compare, the step's
arms identical (tests marked gpu)."""
import ctypes
import re

import numpy as np
import pytest

from launchlab.core import compiler, gates, loader, mode, pdl, sources
from launchlab.kernels import rms_norm

live = pytest.mark.skipif(not mode.is_live(), reason="needs a GPU")


def _ordered_ops(sass: str) -> list[str]:
    return [m.group(2) for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", sass)]


def loads_before_wait(build, expr: str) -> int:
    """Global loads issued before the function's griddepcontrol.wait (SASS ACQBULK), in address order;
    -1 if it has no wait."""
    ops = _ordered_ops(build.sass(expr))
    if "ACQBULK" not in ops:
        return -1
    return sum(1 for o in ops[:ops.index("ACQBULK")] if o.startswith(("LDG", "LDGSTS", "LD.")))


@pytest.mark.parametrize("family", pdl.FAMILIES)
def test_every_chain_kernel_waits_before_it_loads_and_releases_its_successor(family):
    b = compiler.compile_offline(family)
    for expr in sources.FAMILIES[family]:
        ops = _ordered_ops(b.sass(expr))
        assert "ACQBULK" in ops and "PREEXIT" in ops, f"{expr}: griddepcontrol.wait / launch_dependents missing"
        assert ops.index("ACQBULK") < ops.index("PREEXIT"), expr
        if not expr.endswith(", true>"):        # §3's stamped twins load the timeline buffer's pointer first
            assert loads_before_wait(b, expr) == 0, f"{expr} loads global memory before it waits"


def test_the_misplaced_test_build_loads_before_it_waits_and_kernels_off_the_chain_never_wait():
    bad = compiler.compile_offline("rms_norm", extra_options=(pdl.MISPLACED_DEFINE,))
    for expr in ("rms_norm_f32", "rms_norm_wide<true>", "rms_norm_wide_reduce<true>"):
        assert loads_before_wait(bad, expr) > 0, expr                 # the SASS check catches the bug too
    for family in ("stream_read", "waves", "spin"):
        b = compiler.compile_offline(family)
        assert all("ACQBULK" not in _ordered_ops(b.sass(e)) for e in sources.FAMILIES[family])


def test_the_attribute_follows_the_chain_and_the_gates():
    assert pdl.attribute_for("rms_norm") is None                      # outside a chain: CuPy's launch
    with pdl.chain():
        with gates.setting(PDL="1", PDL_OPT_OUT="none"):
            assert pdl.attribute_for("rms_norm") is True and pdl.in_chain()
        with gates.setting(PDL="0"):
            assert pdl.attribute_for("kda_decode") is False
        with gates.setting(PDL="1", PDL_OPT_OUT="rms_norm"):
            assert pdl.attribute_for("rms_norm") is False and pdl.attribute_for("mla_decode") is True
        with pdl.chain():
            assert pdl.in_chain()
        assert pdl.in_chain()
    assert not pdl.in_chain()
    assert gates.preset("main")["PDL"] == gates.preset("fixed")["PDL"] == "1"     # the path, not a flaw


def test_bad_gate_values_and_arguments_are_refused_before_a_launch(monkeypatch):
    monkeypatch.setenv("LAUNCHLAB_PDL", "yes")
    with pytest.raises(gates.GateError, match="LAUNCHLAB_PDL='yes' is not one of 0, 1"):
        with pdl.chain():
            pdl.attribute_for("rms_norm")
    monkeypatch.setenv("LAUNCHLAB_PDL", "1")
    monkeypatch.setenv("LAUNCHLAB_PDL_OPT_OUT", "cublas")
    with pytest.raises(gates.GateError, match="PDL_OPT_OUT"):
        with pdl.chain():
            pdl.attribute_for("rms_norm")
    with pytest.raises(pdl.PDLError, match="argument 1: ndarray -- pass CuPy arrays"):
        pdl.marshal((np.int32(3), np.zeros(4, np.float32)))
    with pytest.raises(pdl.PDLError, match="argument 0: int"):
        pdl.marshal((3,))
    params, n = pdl.marshal((np.int32(-7), np.float32(1.5), np.uint64(2 ** 63 + 5), np.float64(-2.0), np.int64(-1)))
    w = pdl.words(n)
    assert n == 5 and w[0] & 0xFFFFFFFF == np.int32(-7).view(np.uint32) and w[1] == np.float32(1.5).view(np.uint32)
    assert w[2] == 2 ** 63 + 5 and w[3] == np.float64(-2.0).view(np.uint64) and w[4] == 2 ** 64 - 1
    # each void* points at its own 8-byte slot: what the driver dereferences, reading the parameter's size
    assert [params[i] - params[0] for i in range(n)] == [0, 8, 16, 24, 32]
    assert (ctypes.c_int32.from_address(params[0]).value, ctypes.c_float.from_address(params[1]).value) == (-7, 1.5)
    with pytest.raises(pdl.PDLError, match="at most 64"):
        pdl.marshal((np.int32(0),) * 65)


# ------------------------------------------------------------------ on a GPU
@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


N = 7168


def _norm_args(cp, x, w, y):
    return (x, w, y, np.int32(N), np.float32(1e-6), np.uint64(0), np.uint64(0))


@live
@pytest.mark.gpu
def test_pdl_launches_are_byte_identical_to_plain_ones_eager_and_in_a_graph(cp):
    from launchlab.core import timing
    x = cp.asarray(rms_norm.row(2, N, 0))
    w = cp.asarray(rms_norm.weight(N))
    for expr, block in (("rms_norm_f32", 128), ("rms_norm_wide<true>", 1024)):
        k = loader.kernel("rms_norm", expr)
        ys = [cp.empty(N, dtype=cp.float32) for _ in range(4)]
        k.launch(1, block, _norm_args(cp, x, w, ys[0]))                          # CuPy
        k.launch(1, block, _norm_args(cp, x, w, ys[1]), pdl=False)               # cuLaunchKernelEx, plain
        k.launch(1, block, _norm_args(cp, x, w, ys[2]), pdl=True)                # cuLaunchKernelEx, PDL
        cp.cuda.Device().synchronize()      # x and w are copied in on the legacy stream, which a non-blocking
        stream = cp.cuda.Stream(non_blocking=True)                                   # stream does not wait for
        g = timing.capture(lambda: k.launch(1, block, _norm_args(cp, x, w, ys[3]), pdl=True), 8, stream)
        g.launch(stream)
        stream.synchronize()
        ref = cp.asnumpy(ys[0]).view(np.uint32)
        assert all(np.array_equal(ref, cp.asnumpy(y).view(np.uint32)) for y in ys[1:]), expr


@live
@pytest.mark.gpu
def test_a_misplaced_wait_is_caught_by_the_byte_compare(cp):
    """The successor reads x before its wait while its predecessor (released early, spinning 5 ms: longer than the host takes to issue the next launch) has not
    yet written it: the bytes differ from the plain launch's -- only with the attribute. The correct build,
    in the same chain, matches."""
    old = cp.asarray(rms_norm.row(3, N, 0))
    new = cp.asarray(rms_norm.row(4, N, 0))
    w = cp.asarray(rms_norm.weight(N))
    bad = loader.module("rms_norm", defines=(pdl.MISPLACED_DEFINE,))
    writer = bad.get_function("pdl_slow_writer")
    ref = cp.empty(N, dtype=cp.float32)
    loader.kernel("rms_norm", "rms_norm_wide<true>").launch(1, 1024, _norm_args(cp, new, w, ref))
    cp.cuda.Device().synchronize()

    stream = cp.cuda.Stream(non_blocking=True)     # the legacy default stream serializes every launch

    def chain(norm_raw, attribute: bool):
        x, y = old.copy(), cp.empty(N, dtype=cp.float32)
        cp.cuda.Device().synchronize()
        pdl.launch(writer, (8,), (256,), (x, new, np.int32(N), np.uint64(5_000_000)), stream=stream, pdl=False)
        pdl.launch(norm_raw, (1,), (1024,), _norm_args(cp, x, w, y), stream=stream, pdl=attribute)
        stream.synchronize()
        assert np.array_equal(cp.asnumpy(x), cp.asnumpy(new))                   # the writer did write
        return np.array_equal(cp.asnumpy(y).view(np.uint32), cp.asnumpy(ref).view(np.uint32))

    good_raw = loader.kernel("rms_norm", "rms_norm_wide<true>").raw
    bad_raw = bad.get_function("rms_norm_wide<true>")
    assert chain(good_raw, True) and chain(good_raw, False)
    assert chain(bad_raw, False)                  # without the attribute the bug cannot show
    assert not chain(bad_raw, True)               # with it, the compare catches it


@live
@pytest.mark.gpu
def test_the_steps_pdl_arms_dump_identical_bytes(cp):
    from launchlab.kernels import decode
    from launchlab.sections.s07_bit_identity import identity
    cfg = decode.Config(layers=3)
    fixed = gates.preset("fixed")
    for arm in ({"PDL": "0"}, {"PDL_OPT_OUT": "rms_norm"}):
        c = identity.compare("pdl", 300, dict(fixed, PDL="1"), dict(fixed, **arm), cfg, 3)
        assert c.identical, (arm, c.first)


@live
@pytest.mark.gpu
def test_the_timeline_shows_the_overlap_and_the_opted_out_gap(cp):
    from launchlab.sections.s06_one_binary import pdlchain
    plain = pdlchain.timeline("plain", False, launches=12)
    on = pdlchain.timeline("PDL", True, launches=12)
    out = pdlchain.timeline("out", True, 6, launches=12)
    assert all(g > 0 for g in plain.gaps_ns)                                  # serialized: idle between
    assert on.typical_gap_ns() < 0                                            # the next one already resident
    assert out.gaps_ns[5] > 0 > out.typical_gap_ns()                          # the plain launch waits in line
