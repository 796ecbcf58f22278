"""The GPUs learners have (issue 29): the occupancy calculator's per-architecture limits against NVIDIA's published
table, read from NVIDIA's own header (CCCL's cuda/__device/arch_traits.h, shipped in the nvidia-cuda-cccl wheel),
and what the calculator then says on each architecture."""
import json

import pytest

from launchlab.core import hardware, occupancy
from launchlab.faces import archs

FIELDS = ("max_threads_per_multiprocessor", "max_blocks_per_multiprocessor", "max_shared_memory_per_multiprocessor",
          "reserved_shared_memory_per_block", "max_shared_memory_per_block_optin")
COMMON = ("max_threads_per_block", "max_registers_per_block", "max_registers_per_multiprocessor",
          "reserved_shared_memory_per_block", "warp_size")
published = archs.published          # NVIDIA's table, parsed from the header (launchlab.faces.archs)
cccl = pytest.mark.needs("cccl")     # the header comes in the nvidia-cuda-cccl wheel, a development dependency


@cccl
def test_the_header_is_nvidias_table_and_covers_every_arch_the_course_targets():
    table = published()
    assert set(hardware.ARCH_LIMITS) <= set(table), sorted(set(hardware.ARCH_LIMITS) - set(table))
    assert table[(9, 0)]["max_shared_memory_per_multiprocessor"] == 228 * 1024       # a row anyone can check


@cccl
@pytest.mark.parametrize("cc", sorted(hardware.ARCH_LIMITS), ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_each_architectures_limits_are_the_published_ones(cc):
    row = published()[cc]
    s = hardware.for_arch("x", 100, cc)
    assert (s.max_threads_per_sm, s.max_blocks_per_sm, s.smem_per_sm, s.reserved_smem_per_block,
            s.smem_per_block_optin) == tuple(row[f] for f in FIELDS)


@cccl
@pytest.mark.parametrize("cc", sorted(hardware.ARCH_LIMITS), ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_what_every_architecture_shares_is_the_published_common_part(cc):
    row, s = published()[cc], hardware.for_arch("x", 100, cc)
    assert (s.max_threads_per_block, s.regs_per_block, s.regs_per_sm, s.reserved_smem_per_block, s.warp_size) == \
        tuple(row[f] for f in COMMON)


def test_the_h200_constant_is_its_architectures_limits():
    assert hardware.for_arch("NVIDIA H200", 132, (9, 0), hardware.H200.l2_bytes) == hardware.H200


def test_an_unknown_architecture_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match=r"compute capability \(6, 1\); known: 7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0, "
                                         r"12.0"):
        hardware.for_arch("P40", 30, (6, 1))


@pytest.mark.parametrize("gpu, block, regs, smem, blocks_per_sm, limiter", [
    ("A100", 1024, 32, 0, 2, "warps"),
    ("L4", 1024, 32, 0, 1, "warps"),                  # 1,536 threads per SM: a second 1,024-thread block never fits
    ("RTX 4090", 64, 32, 0, 24, "blocks"),            # sm_89's cap of 24 blocks binds before its 48 warps
    ("A100", 256, 32, 100 * 1024, 1, "shared memory"),   # 164 KiB per SM holds one 100 KiB block
    ("B200", 128, 64, 0, 8, "registers"),
])
def test_the_calculator_on_the_gpus_learners_have(gpu, block, regs, smem, blocks_per_sm, limiter):
    o = occupancy.occupancy(block, regs, smem, gpu)
    assert o.blocks_per_sm == blocks_per_sm and limiter in o.describe()
    assert o.blocks_per_wave == blocks_per_sm * hardware.spec(gpu).sm_count


def test_each_learner_gpu_is_its_architecture_with_its_own_sm_count():
    counts = {k: v.sm_count for k, v in hardware.LEARNER_GPUS.items()}
    assert counts == {"A100": 108, "H100 PCIe": 114, "L4": 58, "RTX 4090": 128, "B200": 148}
    assert all(v.compute_capability in hardware.ARCH_LIMITS for v in hardware.LEARNER_GPUS.values())


@cccl
def test_the_calculator_agrees_with_nvidias_table_on_every_arch():
    assert archs.calculator_differences() == {a: [] for a in hardware.ARCHS}


@cccl
def test_a_limit_that_drifts_from_nvidias_table_is_named():
    table = published()
    table[(8, 9)] = dict(table[(8, 9)], max_blocks_per_multiprocessor=32)    # the kind of drift sm_120 had between CCCLs
    del table[(12, 0)]
    d = archs.calculator_differences(table)
    assert d["sm_89"] == ["max_blocks_per_multiprocessor: 24 vs 32"] and d["sm_120"] == ["not in NVIDIA's table"]
    assert d["sm_90"] == []


def test_a_header_initializer_that_is_not_arithmetic_is_refused():
    with pytest.raises(ValueError, match="not an arithmetic initializer"):
        archs._value("__import__('os')", {}, 90)
    assert archs._value("(__cc >= compute_capability{80}) ? 1024 : 0", {}, 75) == 0
    assert archs._value("__traits.a - 1024", {"a": 2048}, 90) == 1024


# ---------------------------------------------------------------- every kernel built for every architecture
REPORT = json.loads(archs.REPORT.read_text())


FULL = [a for a in hardware.ARCHS if a not in ("sm_70", "sm_75")]    # every family builds for these


def test_the_committed_report_has_every_arch_built_and_checked():
    fams = sorted(REPORT["entry_points"]["sm_90"])
    assert archs.headline(REPORT) == {"archs_compiled": FULL, "archs_partly_built": ["sm_70", "sm_75"],
                                      "calculator_archs_checked": list(hardware.ARCHS)}
    assert archs.partly(REPORT) == {"sm_70": {f: REPORT["builds"]["sm_70"]["cannot"][f] for f in fams},
                                    "sm_75": {"mla_decode": REPORT["builds"]["sm_75"]["cannot"]["mla_decode"]}}
    assert "needs sm_80" in REPORT["builds"]["sm_75"]["cannot"]["mla_decode"]
    assert "does not target sm_70" in REPORT["builds"]["sm_70"]["cannot"]["rms_norm"]
    assert REPORT["builds"]["sm_75"]["same_entry_points"]          # the twelve it builds: sm_90's entry points
    assert REPORT["builds"]["sm_80"]["hopper_ops_compiled_out"]            # PDL's wait and release, compiled out
    assert not REPORT["builds"]["sm_90"]["hopper_ops_compiled_out"]


def test_a_build_that_lost_a_kernel_or_its_body_is_not_counted():
    r = json.loads(json.dumps(REPORT))
    fam = next(iter(r["entry_points"]["sm_86"]))
    builds = {a: {f: dict(fns) for f, fns in b.items()} for a, b in r["entry_points"].items()}
    dropped = next(iter(builds["sm_86"][fam]))
    del builds["sm_86"][fam][dropped]
    m = next(iter(builds["sm_89"][fam]))
    builds["sm_89"][fam][m] = dict(builds["sm_89"][fam][m], instructions=3, **{"global": False})
    cannot = {a: b["cannot"] for a, b in r["builds"].items()}
    cmp = archs.compare(builds, cannot)
    assert not cmp["sm_86"]["same_entry_points"] and cmp["sm_89"]["trivial"] == [f"{fam}:{builds['sm_89'][fam][m]['expr']}"]
    assert archs.compiled({"builds": cmp}) == [a for a in FULL if a not in ("sm_86", "sm_89")]
    assert archs.compare(builds)["sm_75"]["same_entry_points"] is False     # a family missing, unexplained


# what NVRTC said when a family did not build for sm_75 (ptxas, abridged from its 40 lines) and for sm_70
PTXAS_75 = """NVRTC could not compile mla_decode.cu for sm_75:
ptxas application ptx input, line 105; error   : Feature 'cp.async' requires .target sm_80 or higher
ptxas application ptx input, line 733; error   : Feature 'cp.async.commit_group' requires .target sm_80 or higher
ptxas application ptx input, line 741; error   : Feature 'cp.async.wait_group' requires .target sm_80 or higher
ptxas application ptx input, line 6204; error   : Feature '.bf16' requires .target sm_80 or higher
ptxas application ptx input, line 6207; error   : Feature '.m16n8k16' requires .target sm_80 or higher"""


def test_why_a_family_does_not_build_is_said_in_a_learners_words():
    assert archs.why_not("sm_75", PTXAS_75) == ("needs sm_80: cp.async (asynchronous copies to shared memory), "
                                                "bf16 arithmetic, the m16n8k16 tensor-core MMA")
    two = PTXAS_75 + "\nptxas ...; error   : Feature 'setmaxnreg' requires .target sm_90a or higher"
    assert archs.why_not("sm_75", two).startswith("needs sm_80 / sm_90a: ")
    other = "NVRTC could not compile x.cu for sm_75:\nx.cu(3): error: identifier \"foo\" is undefined\n"
    assert archs.why_not("sm_75", other) == 'x.cu(3): error: identifier "foo" is undefined'


@cccl
def test_this_nvrtc_targets_sm_75_but_not_sm_70():
    got = archs.supported()
    assert "sm_75" in got and "sm_90" in got and "sm_70" not in got


class _Build:
    """One architecture per class, so pytest-xdist's loadscope spreads the six builds over its workers."""
    arch = ""

    @pytest.mark.slow                              # 65-90 s each: every kernel built for one architecture
    def test_every_kernel_builds_with_the_sm_90_entry_points_and_nontrivial_sass(self):
        """Built now with this machine's NVRTC: the report's entry points, each reaching global memory and keeping
        or dropping the Hopper-only instructions as recorded; instruction counts within 25 % of the report's (an
        NVRTC patch release may schedule a few instructions differently; a dropped body is far outside)."""
        got, cannot = archs.build(self.arch)
        rec = REPORT["entry_points"][self.arch]
        assert cannot == REPORT["builds"][self.arch]["cannot"]
        assert {f: set(fns) for f, fns in got.items()} == {f: set(fns) for f, fns in rec.items()}, \
            "the build differs from data/archs/report.json: python -m launchlab archs --write"
        for f, fns in got.items():
            for m, fn in fns.items():
                r = rec[f][m]
                assert (fn["expr"], fn["global"], fn["hopper_ops"]) == (r["expr"], r["global"], r["hopper_ops"]), m
                assert abs(fn["instructions"] - r["instructions"]) <= 0.25 * r["instructions"], (m, fn, r)
        assert archs.compare({archs.BASE: REPORT["entry_points"][archs.BASE], self.arch: got})[self.arch]["trivial"] == []


for _arch in hardware.ARCHS:
    globals()[f"TestBuild_{_arch}"] = type(f"TestBuild_{_arch}", (_Build,), {"arch": _arch})
