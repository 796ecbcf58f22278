"""The decode step: its layer plan and norm count (any machine); its glue kernels against numpy and a short
model's step on a GPU (tests marked gpu)."""
import numpy as np
import pytest

from launchlab.core import mode
from launchlab.kernels import decode, mla

live = pytest.mark.skipif(not mode.is_live(), reason="needs a GPU")


def test_full_depth_launches_327_norms_and_alternates_mla_and_kda():
    c = decode.Config()
    assert c.layers == 93 and c.kinds.count("mla") == 47 and c.kinds.count("kda") == 46
    assert c.kinds[0] == c.kinds[-1] == "mla" and c.norms_per_token == 327
    assert decode.Config(layers=4).norms_per_token == 4 + 3 + 4 + 3 + 1
    with pytest.raises(decode.DecodeError, match="positive integer"):
        decode.Config(layers=0)


def test_references_behave():
    r = np.random.default_rng(1)
    p = decode.kda_prep_ref(r.standard_normal(4 * 3 * 128 + 3).astype(np.float32), 3)
    assert np.allclose(np.linalg.norm(p["k"], axis=1), 1, atol=1e-6)
    assert np.allclose(np.linalg.norm(p["q"], axis=1), 128 ** -0.5, atol=1e-6)
    assert np.all(p["g"] < 0) and np.all((p["beta"] > 0) & (p["beta"] < 1))
    row = r.standard_normal(576)
    rot = decode.rope_ref(row, 1000)
    assert np.allclose(rot[:512], row[:512])
    assert np.allclose(rot[512:544] ** 2 + rot[544:] ** 2, row[512:544] ** 2 + row[544:] ** 2)   # a rotation
    assert np.allclose(decode.rope_ref(row, 0), row)


@pytest.fixture(scope="module")
def cp():
    import cupy
    return cupy


def launch(expr, grid, block, args):
    from launchlab.core import loader
    loader.kernel(decode.FAMILY, expr).launch(grid, block, args)


@pytest.mark.gpu
@live
def test_the_builds_fused_weight_rounding_is_numpys_bit_for_bit(cp):
    """build()'s one-pass rounding of x * scale to bf16 against the numpy reference: random normals at a weight's
    scale, and exact ties (low half 0x8000, even and odd upper halves), which round to even."""
    r = np.random.default_rng(5)
    x = r.standard_normal(1 << 16).astype(np.float32)
    for scale in (1.0, 7168 ** -0.5, 0.1):
        want = decode.to_bf16_ref(x * np.float32(scale))
        assert np.array_equal(cp.asnumpy(decode.scaled_bf16(cp.asarray(x), scale)), want), scale
    hi = r.integers(0x0080, 0x7F00, 4096, dtype=np.uint32)          # finite, normal upper halves
    ties = ((hi << 16) | np.uint32(0x8000)).view(np.float32)
    got = cp.asnumpy(decode.scaled_bf16(cp.asarray(ties), 1.0))
    assert np.array_equal(got, decode.to_bf16_ref(ties))
    assert np.array_equal(got, np.where(hi & 1, hi + 1, hi).astype(np.uint16))   # to even, worked by hand


@pytest.mark.gpu
@live
def test_glue_kernels_match_numpy(cp):
    r = np.random.default_rng(2)
    x = r.standard_normal(7168).astype(np.float32)
    y = cp.empty(7168, dtype=cp.uint16)
    launch("to_bf16", (28,), 256, (cp.asarray(x), y, np.int32(7168)))
    assert np.array_equal(cp.asnumpy(y), decode.to_bf16_ref(x))                   # exact
    gu = r.standard_normal(2 * 2304).astype(np.float32)
    act = cp.empty(2304, dtype=cp.uint16)
    launch("silu_mul_to_bf16", (9,), 256, (cp.asarray(gu), act, np.int32(2304)))
    ref = decode.silu_mul_ref(gu, 2304)
    assert np.max(np.abs(mla.from_bf16(cp.asnumpy(act)) - ref) / (np.abs(ref) + 1e-30)) <= 2 ** -8
    proj = r.standard_normal(4 * 12 * 128 + 12).astype(np.float32)
    out = [cp.empty((12, 128), dtype=cp.float32) for _ in range(4)] + [cp.empty(12, dtype=cp.float32)]
    launch("kda_prep", (12,), 128, (cp.asarray(proj), *out, np.int32(12)))
    ref = decode.kda_prep_ref(proj, 12)
    for name, got in zip(("q", "k", "v", "g", "beta"), out):
        assert np.allclose(cp.asnumpy(got), ref[name], rtol=1e-5, atol=1e-6), name
    q_in = r.standard_normal(16 * 576).astype(np.float32)
    kv = r.standard_normal(576).astype(np.float32)
    lat = r.standard_normal(512).astype(np.float32)
    for pos in (1_000, 70_000):
        qo, row = cp.empty((16, 576), dtype=cp.uint16), cp.empty(576, dtype=cp.uint16)
        launch("mla_rope_pack", (17,), 256, (cp.asarray(q_in), cp.asarray(lat), cp.asarray(kv), qo, row,
                                              np.int32(16), np.int32(pos)))
        got = [mla.from_bf16(cp.asnumpy(qo)[h]) for h in range(16)] + [mla.from_bf16(cp.asnumpy(row))]
        want = [decode.rope_ref(q_in[h * 576:(h + 1) * 576], pos) for h in range(16)]
        want.append(decode.rope_ref(np.concatenate([lat, kv[512:]]), pos))
        for g_, w_ in zip(got, want):
            assert np.array_equal(g_[:512], mla.from_bf16(decode.to_bf16_ref(w_[:512])))     # latent: exact
            pair = np.maximum(np.abs(np.concatenate([w_[512:544]] * 2)), np.abs(np.concatenate([w_[544:]] * 2)))
            tol = 2 ** -8 * np.abs(w_[512:]) + 2 * decode.rope_angle_error(pos) * pair + 1e-7
            assert np.all(np.abs(g_[512:] - w_[512:]) <= tol), (pos, np.max(np.abs(g_[512:] - w_[512:]) / tol))
    logits = r.standard_normal(20480).astype(np.float32)
    logits[[77, 19000]] = 9.0                                                       # a tie: the first wins
    tok = cp.zeros(1, dtype=cp.int32)
    launch("argmax_f32", (1,), 1024, (cp.asarray(logits), np.int32(20480), tok))
    assert int(tok[0]) == 77
    table = cp.asarray(decode.to_bf16_ref(r.standard_normal((40, 7168)).astype(np.float32)))
    h = cp.empty(7168, dtype=cp.float32)
    launch("embed_row", (28,), 256, (table, cp.asarray(np.array([33], np.int32)), np.int32(7168), h))
    assert np.array_equal(cp.asnumpy(h), mla.from_bf16(cp.asnumpy(table)[33]))


@pytest.mark.gpu
@live
def test_cublas_bf16_gemv_matches_float64(cp):
    r = np.random.default_rng(3)
    x = decode.to_bf16_ref(r.standard_normal(1536).astype(np.float32))
    w = decode.to_bf16_ref((r.standard_normal((1536, 2304)) * 1536 ** -0.5).astype(np.float32))
    y = cp.empty(2304, dtype=cp.float32)
    decode.gemv_bf16(cp.asarray(x), cp.asarray(w), y)
    ref = mla.from_bf16(x).astype(np.float64) @ mla.from_bf16(w).astype(np.float64)
    assert np.max(np.abs(cp.asnumpy(y) - ref)) <= 1e-4 * np.max(np.abs(ref))
    wb = decode.to_bf16_ref((r.standard_normal((4, 512, 128)) * 512 ** -0.5).astype(np.float32))
    xb = decode.to_bf16_ref(r.standard_normal((4, 512)).astype(np.float32))
    yb = cp.empty((4, 128), dtype=cp.float32)
    decode.gemv_bf16_batched(cp.asarray(xb), cp.asarray(wb), yb)
    ref = np.einsum("bk,bkn->bn", mla.from_bf16(xb).astype(np.float64), mla.from_bf16(wb).astype(np.float64))
    assert np.max(np.abs(cp.asnumpy(yb) - ref)) <= 1e-4 * np.max(np.abs(ref))


@pytest.mark.gpu
@live
def test_a_short_model_decodes_and_counts_its_norms(cp):
    m = decode.build(decode.Config(layers=4), ctx=3000, extra=4)
    log = m.launches(3000)
    assert sum(1 for x in log if x.kernel.startswith("rms_norm:")) == m.cfg.norms_per_token == 15
    logits = cp.asnumpy(m.buf["logits"])
    assert np.all(np.isfinite(logits)) and 0 <= int(m.buf["token"][0]) < m.cfg.vocab
    assert int(m.buf["token"][0]) == int(np.argmax(logits))
    before = cp.asnumpy(m.state["mla"][0][0, 3001]).copy()
    m.step(3001)
    assert not np.array_equal(before, cp.asnumpy(m.state["mla"][0][0, 3001]))      # the step appended its row


def test_profile_rows_group_by_role_and_read_the_calculator():
    """The profile's grouping and columns, on a hand-made step of four launches and two timed steps."""
    from launchlab.sections.s06_one_binary import stepprofile
    L = decode.Launch
    log = [L("L0.input_norm", "rms_norm:rms_norm_f32", (1,), 128, 0), L("L1.input_norm", "rms_norm:rms_norm_f32", (1,), 128, 1),
           L("L1.kda.prep", "decode_ops:kda_prep", (12,), 128, 1), L("lm_head", "cublas:gemmEx", (), 0, -1)]
    rows = stepprofile.rows(log, [[3.0, 3.2, 2.0, 40.0], [3.1, 3.3, 2.2, 41.0]], live=False)
    by = {r.role: r for r in rows}
    assert rows[0].role == "lm_head" and by["input_norm"].calls == 2 and by["kda.prep"].calls == 1
    assert by["input_norm"].us_per_call == pytest.approx(3.15) and by["input_norm"].us_per_token == pytest.approx(6.3)
    assert by["kda.prep"].registers > 0 and by["kda.prep"].occupancy_pct > 0 and by["lm_head"].registers is None
    assert by["input_norm"].limiter and by["lm_head"].limiter == "cuBLAS"
    assert by["kda.prep"].sms_with_work == 12 and by["input_norm"].sms_with_work == 1 and by["lm_head"].sms_with_work is None
    with pytest.raises(ValueError, match="every launch"):
        stepprofile.rows(log, [[1.0]], live=False)


@pytest.mark.gpu
@live
def test_two_builds_from_one_seed_decode_the_same_bytes_and_the_graph_runs(cp, tmp_path):
    from launchlab.core import dumps
    from launchlab.sections.s06_one_binary import stepprofile
    cfg = decode.Config(layers=2)
    paths = []
    for name in ("a", "b"):
        m = decode.build(cfg, ctx=9000, extra=8)
        paths.append(m.dump(tmp_path / name, [9000, 9001], layers=(0, 1)))
    c = dumps.cmp(*paths)
    assert c.identical and c.records == 2, c.describe()
    p = stepprofile.profile(m, 9002, reps=10)
    assert p.norms() == cfg.norms_per_token == 8 and p.launches == len(m.launches(9002))
    assert 0 < p.event_cost_us < 10 and abs(p.agreement) <= 0.10, (p.event_cost_us, p.sum_us, p.step_us)
    assert min(p.eager_us) > p.step_us                  # eager events count the host's launch gaps
    ms = stepprofile.graph_ms_per_token(m, [9003, 9004], reps=2)
    assert all(0 < x < 100 for x in ms)


@pytest.mark.gpu
@live
def test_a_restored_model_decodes_the_bytes_of_a_fresh_build(cp, tmp_path):
    """identity.compare dumps its second arm from the first arm's build, restored (Model.save / restore): the
    bytes must be a fresh build's, under an arm whose kernels differ too."""
    from launchlab.core import dumps, gates
    cfg = decode.Config(layers=3)
    m = decode.build(cfg, ctx=300, extra=4)
    saved = m.save()
    with gates.setting(KDA_VT="0"):
        m.dump(tmp_path / "first", [300, 301, 302], layers=(0, 1, 2))
    m.restore(saved)
    with gates.setting(KDA_VT="1"):
        m.dump(tmp_path / "restored", [300, 301, 302], layers=(0, 1, 2))
    fresh = decode.build(cfg, ctx=300, extra=4)
    with gates.setting(KDA_VT="1"):
        fresh.dump(tmp_path / "fresh", [300, 301, 302], layers=(0, 1, 2))
    c = dumps.cmp(tmp_path / "restored", tmp_path / "fresh")
    assert c.identical and c.records == 3, c.describe()


def test_a_dump_holds_each_chosen_layer_in_step_order_then_the_logits():
    m = decode.Model(decode.Config(layers=4), 0, 1, {}, {}, {})
    assert list(m.dump_arrays((2, 1))) == ["kda_out.L1", "hidden.L1", "hidden.L2", "logits"]
    assert m.dump_arrays((1,))["kda_out.L1"] == ((12 * 128,), np.float32)
    with pytest.raises(decode.DecodeError, match="outside"):
        m.dump_arrays((4,))


def test_eval_and_gain_arithmetic():
    from launchlab.core import timing
    from launchlab.sections.s06_one_binary import onebinary
    e = onebinary.Eval(131_072, 8, timing.Timing([8000.0, 8100.0, 7900.0], "graph", 8))
    assert e.ms_per_token == pytest.approx(8.0) and e.tok_s == pytest.approx(125.0)
    assert onebinary.gain_pct(52.96, 49.63) == pytest.approx(6.71, abs=0.01)        # the lecture's +6.7 %


@pytest.mark.gpu
@live
def test_abba_of_a_gate_on_a_short_model(cp):
    from launchlab.core import gates
    from launchlab.sections.s06_one_binary import onebinary
    m = decode.build(decode.Config(layers=2), ctx=20_000, extra=32)
    ab = onebinary.abba(m, {"KDA_VT": "0"}, {"KDA_VT": "1"}, tokens=2, pairs=1, reps=2)
    assert ab.order == ["A", "B"] and all(t.median > 0 for t in ab.results)
    e = onebinary.eval_step(m, tokens=2, reps=2)
    assert 0 < e.ms_per_token < 100 and gates.value("KDA_VT") == "1"


@pytest.mark.gpu
@live
def test_vt_arms_are_byte_identical_and_the_fma_arm_is_not_on_a_short_model():
    from launchlab.sections.s07_bit_identity import identity
    cfg = decode.Config(layers=2)
    vt = identity.compare("KDA_VT 0 vs 1", 2048, {"KDA_VT": "0"}, {"KDA_VT": "1"}, cfg, positions=2)
    assert vt.identical and vt.max_rel_logit_diff == 0.0
    fma = identity.compare("KDA_ELIDE rn vs fma", 2048, {"KDA_ELIDE": "rn"}, {"KDA_ELIDE": "fma"}, cfg, positions=2)
    assert not fma.identical and fma.per_array["kda_out.L1"] > 0        # the KDA layer's output moved ...
    assert fma.max_rel_logit_diff < 1e-4                                # ... and a tolerance passes anyway
