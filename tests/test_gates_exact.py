"""The gates word for word (issue 27: mutation testing): registering a gate, reading one (unset, empty,
padded, invalid, cached), the table's layout and every refusal. A test gate is registered and removed here."""
import os

import pytest

from launchlab.core import gates
from launchlab.core.gates import Gate, GateError


@pytest.fixture
def test_gate(clean_gates, monkeypatch):
    g = Gate("ZZ_TEST", ("a", "b", "c"), default="b", baseline="a", kernel="spin",
             doc="a gate for the tests: a long line of words that wraps onto a second line of the table here")
    monkeypatch.setattr(gates, "GATES", dict(gates.GATES))
    monkeypatch.setattr(gates, "_valid", {})
    assert gates.register(g) is g and gates.GATES["ZZ_TEST"] is g
    yield g


def test_register_refuses_a_default_or_a_baseline_outside_the_choices(test_gate):
    for default, baseline in (("x", "a"), ("a", "x"), ("x", "y")):
        with pytest.raises(GateError) as e:
            gates.register(Gate("ZZ_BAD", ("a", "b"), default=default, baseline=baseline, kernel="spin", doc=""))
        assert str(e.value) == "LAUNCHLAB_ZZ_BAD: default and baseline must be among ('a', 'b')"
        assert "ZZ_BAD" not in gates.GATES


def test_unset_empty_padded_invalid_and_cached(test_gate, monkeypatch):
    assert gates.value("ZZ_TEST") == "b"                                    # unset: the default
    monkeypatch.setenv("LAUNCHLAB_ZZ_TEST", "")
    assert gates.value("ZZ_TEST") == "b"                                    # empty: the default too
    monkeypatch.setenv("LAUNCHLAB_ZZ_TEST", " c ")
    assert gates.value("ZZ_TEST") == "c" and gates._valid[("LAUNCHLAB_ZZ_TEST", " c ")] == "c"
    assert gates.value("ZZ_TEST") == "c"                                    # the cached answer, the same
    monkeypatch.setenv("LAUNCHLAB_ZZ_TEST", " d")
    with pytest.raises(GateError) as e:
        gates.value("ZZ_TEST")
    assert str(e.value) == ("LAUNCHLAB_ZZ_TEST='d' is not one of a, b, c (a gate for the tests: a long line of "
                            "words that wraps onto a second line of the table here)")
    assert ("LAUNCHLAB_ZZ_TEST", " d") not in gates._valid


def test_the_table_row_by_row(test_gate, monkeypatch):
    monkeypatch.setenv("LAUNCHLAB_ZZ_TEST", "c")
    assert gates.table("ZZ_").split("\n") == [
        "gate                             now  default  baseline  what it selects",
        "LAUNCHLAB_ZZ_TEST                  c        b         a  a gate for the tests: a long line of words that",
        " " * 57 + "wraps onto a second line of the table here"]
    every = gates.table()
    assert every.count("\nLAUNCHLAB_") == len(gates.GATES) and every.index("LAUNCHLAB_KDA_BODY") < every.index(
        "LAUNCHLAB_ZZ_TEST")                                                 # sorted by name
    assert gates.table("NO_SUCH_") == "gate                             now  default  baseline  what it selects"


def test_an_undocumented_gate_has_an_empty_description(test_gate):
    gates.register(Gate("ZZ_NODOC", ("0",), default="0", baseline="0", kernel="spin", doc=""))
    assert gates.table("ZZ_NODOC").split("\n")[1] == "LAUNCHLAB_ZZ_NODOC                 0        0         0  "


def test_setting_refuses_an_unknown_gate_and_a_bad_value_and_changes_nothing(test_gate):
    with pytest.raises(GateError) as e:
        with gates.setting(ZZ_TEST="a", NOPE="1"):
            pass
    assert str(e.value).startswith("no gate 'NOPE': the gates are ") and str(e.value).endswith(
        "(give the name without the LAUNCHLAB_ prefix)")
    assert "LAUNCHLAB_ZZ_TEST" not in os.environ
    with pytest.raises(GateError) as e:
        with gates.setting(ZZ_TEST="z"):
            pass
    assert str(e.value) == "LAUNCHLAB_ZZ_TEST='z' is not one of a, b, c"
    with pytest.raises(GateError) as e:
        gates.preset("best")
    assert str(e.value) == "preset must be one of main, fixed, got 'best'"
