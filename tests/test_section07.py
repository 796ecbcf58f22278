"""§7 on the recorded decode step (any machine): cmp of the arms at every depth, what differs first, the
tolerance test that passes every arm, and the FMA forms' bytes against their SASS."""
import pytest

from launchlab.kernels import splits
from launchlab.sections.s07_bit_identity import identity
from launchlab.kernels import fma_forms


@pytest.fixture(scope="module")
def data():
    return identity.recorded()


def test_vt_is_identical_at_every_depth_full_model(data):
    vt = data.vt()
    assert [c.ctx for c in vt] == list(identity.VT_DEPTHS) and data.layers == 93
    for c in vt:
        assert c.identical and c.differing == 0 and c.sha_a == c.sha_b and c.tokens_agree
        assert c.elements == data.positions * (93 * 7168 + 46 * 1536 + 20480)       # every layer dumped


def test_the_mla_floor_is_identical_only_where_no_split_happens(data):
    for c in data.mla():
        assert c.identical == (c.ctx <= splits.SPLIT_MIN_CTX), c.ctx
    above = data.case("MLA_FLOOR hardcoded vs derived", 131_072)
    assert above.first[1] == "hidden.L0" and above.max_rel_logit_diff > 0       # layer 0 is MLA


def test_the_fma_arm_differs_first_in_the_first_kda_layer(data):
    f = data.fma()
    assert not f.identical and f.first[:2] == [identity.FMA_CTX, "kda_out.L1"]
    first = f.per_position[str(identity.FMA_CTX)]
    assert all(first.get(f"kda_out.L{i}", 0) > 0 for i in range(1, 93, 2))     # every KDA layer's output moved
    assert f.steps[0][2] == f.steps[0][3]                                        # same first token ...
    assert sum(first.values()) < f.differing                                     # ... and it grows from there


def test_a_tolerance_test_passes_every_kda_arm_identical_or_not(data):
    assert all(data.tolerance_passes().values())
    kinds = {v["identical_to_baseline"] for v in data.kda_numeric.values()}
    assert kinds == {True, False}                                                # both kinds pass


def test_each_fma_form_gives_the_bytes_its_sass_predicts(data):
    by = {(f.family, f.form): f for f in data.forms}
    assert all(f.matches_prediction for f in data.forms) and len(by) == 6
    assert by["fma_forms", "tmp"].ffma == 1 and by["fma_forms", "rn"].ffma == 0
    assert by["fma_forms", "tmp"].differ_from_two_roundings > 0 == by["fma_forms", "rn"].differ_from_two_roundings
    assert all(by["fma_forms_strict", f].differ_from_two_roundings == 0 for f in fma_forms.FORMS)
    assert all(f.rel_err_vs_f64 < 1e-6 for f in data.forms)


def test_the_tables_print(data):
    assert "IDENTICAL" in identity.table(data) and "kda_out.L1" in identity.table(data)
    assert "pass" in identity.tolerance_table(data) and "FFMA" in identity.forms_table(data)
