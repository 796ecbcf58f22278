"""The lab's arithmetic worked by hand (issue 27: mutation testing): the learner's tools (launchlab.sections.
s09_lab.lab) and the instructor's reference (lab_solutions/lab_reference.py), on both sides of each edge.

The decode step's shapes are the model's (decode.Config): hidden 7,168; KDA 12 heads of K = V = 128 and a
6,156-float projection. The H200 has 132 SMs."""
import pytest

from launchlab.faces import grading
from launchlab.sections.s09_lab import lab as tools

ref = grading.reference()
SMS = 132


@pytest.fixture(scope="module")
def data():
    return tools.recorded()


def test_bytes_per_call_by_hand():
    assert tools.bytes_per_call("rms_norm:rms_norm_f32") == 3 * 7168 * 4 == 86016
    assert tools.bytes_per_call("rms_norm:rms_norm_f32:twin") == 86016             # split at the first colon
    # KDA: the state (128 x 128 floats) read and written, plus the staged product written and read back (store)
    # or the state read again (rn, fma); plus q, k, the decays (3 x 128), the 2 x 128 value vectors and beta
    per_head_vectors = (3 * 128 + 2 * 128 + 1) * 4
    assert tools.bytes_per_call("kda_decode:kda_walk<0>") == 12 * (4 * 128 * 128 * 4 + per_head_vectors) == 3176496
    assert tools.bytes_per_call("kda_decode:kda_walk<1>") == 12 * (3 * 128 * 128 * 4 + per_head_vectors) == 2390064
    assert tools.bytes_per_call("kda_decode:kda_tuned<2>") == 2390064
    assert tools.bytes_per_call("decode_ops:kda_prep") == (6156 + 4 * 12 * 128 + 12) * 4 == 49248
    for kernel in ("decode_ops:add_inplace", "mla_decode:kda_prep", "cublas:gemmEx"):
        with pytest.raises(ValueError) as e:
            tools.bytes_per_call(kernel)
        assert str(e.value) == f"no byte count for {kernel}"


def test_blocks_keys_and_the_answered_check():
    assert tools.sms() == SMS and tools.blocks([129, 1, 1]) == 129 and tools.blocks([4, 12]) == 48
    assert tools.blocks(None) is None and tools.blocks([]) is None
    assert tools.key({"kernel": "rms_norm:rms_norm_f32", "grid": [1], "block": 128}) == "rms_norm:rms_norm_f32 [1] 128"
    assert tools._answered(1, "a") and tools._answered()
    assert not tools._answered(1, None) and not tools._answered(..., 1) and not tools._answered(None)


def test_resident_blocks_from_the_recorded_registers(data):
    """rms_norm_f32: block 128 (4 warps), 32 registers (4,096 per warp... 1,024 per warp of 32 x 32), 128 B of
    shared memory: warps allow 64 / 4 = 16, registers 65,536 / (4 x 1,024) = 16, the block cap 32 -> 16."""
    row = {"kernel": "rms_norm:rms_norm_f32", "grid": [1], "block": 128}
    r = tools.profile_row(data.step, row)
    assert (r.registers, r.smem, r.calls) == (32, 128, 93)                    # the most-called of its rows
    assert tools.resident(data.step, row) == 16
    assert tools.resident(data.step, {"kernel": "cublas:gemmEx", "grid": None, "block": None}) is None
    mla = {"kernel": "mla_decode:mla_split", "grid": [129, 1, 1], "block": 128}
    assert tools.resident(data.step, mla) == 2                                 # 96,000 B of shared memory per block
    assert tools.profile_row(data.step, mla).kernel == "mla_decode:mla_split"
    with pytest.raises(ValueError):
        tools.profile_row(data.step, {"kernel": "rms_norm:rms_norm_f32", "grid": [129, 1, 1], "block": 128})


def test_the_recorded_fixes_and_the_swept_points(data):
    for g in ("RMS_WIDE", "MLA_FLOOR", "KDA_VT"):
        assert data.fix(g).gate == g
    p, where = tools.point(data, "kda_bv", 32)
    assert (p.knob, p.value, where) == ("kda_bv", 32, "recorded on the H200") and p.kernel == "kda_decode:kda_walk<0>"
    assert tools.point(data, "rms_block", 1024)[0].value == 1024
    assert [q.value for q in data.swept("rms_block")] == [128, 256, 512, 1024]
    for knob, value in (("kda_bv", 48), ("nope", 32)):
        with pytest.raises(ValueError) as e:
            tools.point(data, knob, value)
        assert str(e.value) == (f"{knob}={value!r} is not a swept point; {knob} takes "
                                f"{tools.SWEEPS.get(knob)}")


def test_occupancy_wave_fill_and_flag_at_their_edges():
    assert ref.occupancy({"grid": [12]}) == 12 / SMS and ref.occupancy({"grid": None}) is None
    assert ref.occupancy({"grid": [1000]}) == 1.0 and ref.occupancy({"grid": [4, 12]}) == 48 / SMS
    assert ref.wave_fill({"grid": [129, 1, 1]}, 2) == 129 / 264 and ref.wave_fill({"grid": [1000]}, 2) == 1.0
    assert ref.wave_fill({"grid": [12]}, 16) == 12 / (SMS * 16)
    assert ref.wave_fill({"grid": None}, 2) is None and ref.wave_fill({"grid": [12]}, None) is None
    assert ref.wave_fill({"grid": [12]}, 0) is None
    half, under = {"grid": [66]}, {"grid": [65]}
    assert ref.flagged([half, under, {"grid": None}, {"grid": [132]}]) == [under]       # 50 % is not under 50 %


def test_recoverable_time_and_the_ranking_by_it():
    assert ref.recoverable_ms({"ms_per_token": 2.0, "wave_fill": 0.25}) == 1.5
    assert ref.recoverable_ms({"ms_per_token": 2.0, "wave_fill": None}) is None
    assert ref.recoverable_ms({"ms_per_token": 2.0}) is None
    rows = [{"k": "a", "ms_per_token": 1.0, "wave_fill": 0.5}, {"k": "b", "ms_per_token": 3.0, "wave_fill": 0.9},
            {"k": "c", "ms_per_token": 9.0, "wave_fill": None}, {"k": "d", "ms_per_token": 0.8, "wave_fill": 0.0}]
    assert [r["k"] for r in ref.ranking(rows)] == ["d", "a", "b"]            # 0.8, 0.5, 0.3 ms idle; c is cuBLAS


def test_the_table_groups_the_profile_by_launch_shape(data):
    rows = ref.table(data.step)
    norm = next(r for r in rows if r["kernel"] == "rms_norm:rms_norm_f32" and r["grid"] == [1])
    mine = [r for r in data.step.rows if r.kernel == "rms_norm:rms_norm_f32" and list(r.grid) == [1]
            and r.block == 128]
    assert norm["calls"] == sum(r.calls for r in mine) and len(norm["roles"]) == len(mine) >= 2
    assert norm["roles"] == [r.role for r in mine]
    assert norm["ms_per_token"] == pytest.approx(sum(r.us_per_token for r in mine) / 1e3)
    assert [r["ms_per_token"] for r in rows] == sorted((r["ms_per_token"] for r in rows), reverse=True)
    assert rows[0]["kernel"] == "cublas:gemmEx" and rows[0]["grid"] is None and rows[0]["block"] is None
    assert sum(r["calls"] for r in rows) == 1729
    filled = ref.with_fill(rows, data.step)
    n = next(r for r in filled if r["kernel"] == "rms_norm:rms_norm_f32" and r["grid"] == [1])
    assert n["occupancy"] == 1 / SMS and n["wave_fill"] == 1 / (SMS * 16) and "occupancy" not in norm
    assert filled[0]["occupancy"] is None and filled[0]["wave_fill"] is None


def test_the_offenders_diagnosis_uses_its_geometry(data):
    row = {"kernel": "rms_norm:rms_norm_f32", "grid": [1], "block": 128}
    d = ref.diagnose(data, row)
    assert d.floor_us == pytest.approx(86016 / (data.copy_tbs * 1e12) * 1e6 + data.launch_us)
    assert d.verdict == "starvation" and "1 blocks on 132 SMs" in str(d)


def test_the_headline(data):
    h = ref.headline(data)
    rows = ref.with_fill(ref.table(data.step), data.step)
    norm = next(r for r in rows if r["kernel"] == "rms_norm:rms_norm_f32" and r["grid"] == [1])
    assert h == {"lab_offender": "rms_norm:rms_norm_f32 [1] 128",
                 "lab_offender_recoverable_ms": norm["ms_per_token"] * (1 - 1 / (SMS * 16)),
                 "lab_kda_vt_identical": True}
    import dataclasses
    kda = [c for c in data.cmp if c.fix == "KDA_VT"]
    assert kda and all(c.identical for c in data.cmp)                      # as recorded: every fix identical
    broken = dataclasses.replace(kda[0], identical=False)
    assert ref.headline(dataclasses.replace(data, cmp=data.cmp + [broken]))["lab_kda_vt_identical"] is False
    other = dataclasses.replace(next(c for c in data.cmp if c.fix != "KDA_VT"), identical=False)
    assert ref.headline(dataclasses.replace(data, cmp=data.cmp + [other]))["lab_kda_vt_identical"] is True


def test_resident_counts_the_shared_memory_of_the_profiled_kernel():
    """A row whose shared memory binds: 256 threads, 32 registers, 48 KiB per block -- warps allow 8 blocks,
    registers 8, shared memory 233,472 / (49,152 + 1,024 reserved) = 4. The profile here is plain data."""
    from types import SimpleNamespace as NS
    prof = NS(rows=[NS(kernel="k:k", grid=[10], block=256, calls=5, registers=32, smem=49152),
                    NS(kernel="k:k", grid=[10], block=256, calls=1, registers=255, smem=0)])
    row = {"kernel": "k:k", "grid": [10], "block": 256}
    assert tools.profile_row(prof, row).calls == 5 and tools.resident(prof, row) == 4
    prof.rows[0].smem = None                                                   # no shared memory recorded: 0
    assert tools.resident(prof, row) == 8
    assert tools.profile_row(NS(rows=prof.rows + [NS(kernel="k:k", grid=[11], block=256, calls=9, registers=32,
                                                       smem=0)]), row).calls == 5      # another grid is not this row


def test_step_8_asks_about_the_head_by_default():
    sites = tools.sharded_sites()
    assert sites == tools.sharded_sites("head") and sum(hit for _, hit in sites) == 9
    assert ("kernels/decode.py:step grid=(c.kda_heads,)", True) in sites
