"""The decode step: its layer plan and norm count (any machine); its glue kernels against numpy and a short
model's step on a GPU (tests marked gpu)."""
import numpy as np
import pytest

from launchlab import decode, mla, mode

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
    from launchlab import kernels
    kernels.kernel(decode.FAMILY, expr).launch(grid, block, args)


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
