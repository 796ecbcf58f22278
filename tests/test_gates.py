import pytest

from launchlab.core import gates, sources
from launchlab.kernels import stream_read


def test_defaults_and_env(clean_gates, monkeypatch):
    assert stream_read.variant() == (4, 4)
    monkeypatch.setenv("LAUNCHLAB_STREAM_VEC", "1")
    assert stream_read.variant() == (1, 4)
    monkeypatch.setenv("LAUNCHLAB_STREAM_UNROLL", "8")
    with pytest.raises(gates.GateError, match="LAUNCHLAB_STREAM_UNROLL='8' is not one of 1, 4"):
        stream_read.variant()


def test_restore_set_returns_every_gate_to_baseline(clean_gates, monkeypatch):
    rs = gates.restore_set()
    assert rs == ("LAUNCHLAB_KDA_BODY=walk LAUNCHLAB_KDA_ELIDE=store LAUNCHLAB_KDA_VT=0 LAUNCHLAB_LAB_ADD=0 LAUNCHLAB_MLA_FLOOR=hardcoded LAUNCHLAB_MLA_PIPELINE=off LAUNCHLAB_MLA_SKIP=off "
                  "LAUNCHLAB_PDL=1 LAUNCHLAB_PDL_OPT_OUT=none LAUNCHLAB_RMS_REDUCE=narrow LAUNCHLAB_RMS_UNROLL=auto LAUNCHLAB_RMS_WIDE=0 "
                  "LAUNCHLAB_STREAM_UNROLL=1 "
                  "LAUNCHLAB_STREAM_VEC=1 LAUNCHLAB_TIMELINE=0")
    for assignment in rs.split():
        k, v = assignment.split("=")
        monkeypatch.setenv(k, v)
    assert stream_read.variant() == (1, 1)
    assert all(gates.value(g.name) == g.baseline for g in gates.GATES.values())


def test_setting_context_restores(clean_gates):
    with gates.setting(STREAM_VEC="1"):
        assert gates.value("STREAM_VEC") == "1"
    assert gates.value("STREAM_VEC") == "4"
    with pytest.raises(gates.GateError):
        with gates.setting(STREAM_VEC="2"):
            pass


def test_every_gate_selects_a_compiled_variant():
    exprs = set(sources.FAMILIES["stream_read"])
    for v in gates.GATES["STREAM_VEC"].choices:
        for u in gates.GATES["STREAM_UNROLL"].choices:
            assert stream_read.expr(int(v), int(u)) in exprs


def test_every_kda_and_rms_arm_names_a_compiled_kernel(clean_gates, monkeypatch):
    """Each gate combination resolves, before any launch, to an instantiation the build contains."""
    from launchlab.kernels import kda_decode, rms_norm
    kda_exprs, rms_exprs = set(sources.FAMILIES["kda_decode"]), set(sources.FAMILIES["rms_norm"])
    for body in gates.GATES["KDA_BODY"].choices:
        for vt in gates.GATES["KDA_VT"].choices:
            for m in gates.GATES["KDA_ELIDE"].choices:
                for k, v in (("KDA_BODY", body), ("KDA_VT", vt), ("KDA_ELIDE", m)):
                    monkeypatch.setenv("LAUNCHLAB_" + k, v)
                p = kda_decode.plan(12)
                assert p.expr in kda_exprs and p.body == body and p.mode == m
                assert p.block == (128 if body == "walk" else p.bv // 4 * 32)
    for wide in ("0", "1"):
        for unroll in gates.GATES["RMS_UNROLL"].choices:
            for n, aligned in ((7168, True), (7166, True), (7168, False)):
                monkeypatch.setenv("LAUNCHLAB_RMS_WIDE", wide)
                monkeypatch.setenv("LAUNCHLAB_RMS_UNROLL", unroll)
                p = rms_norm.plan(n, aligned)
                assert p.expr in rms_exprs and (("_chain" in p.expr) == (unroll == "1")), p


def test_the_timeline_gate_selects_the_stamped_twin_only_where_stamps_have_somewhere_to_go(clean_gates, monkeypatch):
    from launchlab.core import timeline
    assert timeline.stamped("kda_decode") is False                  # off by default
    monkeypatch.setenv("LAUNCHLAB_TIMELINE", "1")
    with pytest.raises(timeline.TimelineError, match="inside timeline.capture"):
        timeline.stamped("kda_decode")                              # on, but no buffer armed: refused
    assert timeline.stamped("kda_decode", explicit=False) is False  # an explicit choice overrides the gate
    timeline._armed.add("kda_decode")
    try:
        assert timeline.stamped("kda_decode") is True
    finally:
        timeline._armed.discard("kda_decode")


def test_presets_main_is_the_restore_set_and_fixed_the_defaults(clean_gates):
    main, fixed = gates.preset("main"), gates.preset("fixed")
    assert " ".join(f"{gates.GATES[k].env}={v}" for k, v in sorted(main.items())) == gates.restore_set()
    assert fixed == {g.name: g.default for g in gates.GATES.values()}
    assert main["KDA_VT"] == "0" and fixed["KDA_VT"] == "1" and main["MLA_FLOOR"] == "hardcoded"
    with gates.setting(**main):
        assert gates.value("RMS_WIDE") == "0" and gates.value("KDA_BODY") == "walk"
    assert gates.value("RMS_WIDE") == "1"
    with pytest.raises(gates.GateError, match="preset must be"):
        gates.preset("fast")


def test_steady_reads_each_gate_once_and_setting_inside_it_is_seen(clean_gates, monkeypatch):
    """gates.steady (one decode step): a gate is read from the environment at its first ask and remembered;
    a change made behind its back is not seen until the block ends, one made through setting() is."""
    with gates.steady():
        assert gates.value("STREAM_VEC") == "4"
        monkeypatch.setenv("LAUNCHLAB_STREAM_VEC", "1")
        assert gates.value("STREAM_VEC") == "4"            # held for the block
        with gates.steady():                               # nested: the same block
            assert gates.value("STREAM_VEC") == "4"
        with gates.setting(STREAM_VEC="1"):
            assert gates.value("STREAM_VEC") == "1"
        monkeypatch.setenv("LAUNCHLAB_STREAM_VEC", "4")
        with gates.setting(KDA_VT="0"):                    # any setting() forgets what was read
            assert gates.value("STREAM_VEC") == "4"
    monkeypatch.setenv("LAUNCHLAB_STREAM_VEC", "1")
    assert gates.value("STREAM_VEC") == "1"                # read again outside
    monkeypatch.setenv("LAUNCHLAB_STREAM_VEC", "2")
    with gates.steady(), pytest.raises(gates.GateError, match="STREAM_VEC='2'"):
        gates.value("STREAM_VEC")                          # a bad value is refused inside too
