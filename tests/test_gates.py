import pytest

from launchlab import bandwidth, gates


def test_defaults_and_env(clean_gates, monkeypatch):
    assert bandwidth.variant() == (4, 4)
    monkeypatch.setenv("LAUNCHLAB_STREAM_VEC", "1")
    assert bandwidth.variant() == (1, 4)
    monkeypatch.setenv("LAUNCHLAB_STREAM_UNROLL", "8")
    with pytest.raises(gates.GateError, match="LAUNCHLAB_STREAM_UNROLL='8' is not one of 1, 4"):
        bandwidth.variant()


def test_restore_set_returns_every_gate_to_baseline(clean_gates, monkeypatch):
    rs = gates.restore_set()
    assert rs == ("LAUNCHLAB_KDA_ELIDE=store LAUNCHLAB_KDA_VT=0 LAUNCHLAB_RMS_REDUCE=narrow LAUNCHLAB_RMS_WIDE=0 "
                  "LAUNCHLAB_STREAM_UNROLL=1 LAUNCHLAB_STREAM_VEC=1")
    for assignment in rs.split():
        k, v = assignment.split("=")
        monkeypatch.setenv(k, v)
    assert bandwidth.variant() == (1, 1)
    assert all(gates.value(g.name) == g.baseline for g in gates.GATES.values())


def test_setting_context_restores(clean_gates):
    with gates.setting(STREAM_VEC="1"):
        assert gates.value("STREAM_VEC") == "1"
    assert gates.value("STREAM_VEC") == "4"
    with pytest.raises(gates.GateError):
        with gates.setting(STREAM_VEC="2"):
            pass


def test_every_gate_selects_a_compiled_variant():
    from launchlab import kernels
    exprs = set(kernels.FAMILIES["stream_read"])
    for v in gates.GATES["STREAM_VEC"].choices:
        for u in gates.GATES["STREAM_UNROLL"].choices:
            assert bandwidth.expr(int(v), int(u)) in exprs
