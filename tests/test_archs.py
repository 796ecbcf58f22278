"""The GPUs learners have (issue 29): the occupancy calculator's per-architecture limits against NVIDIA's published
table, read from NVIDIA's own header (CCCL's cuda/__device/arch_traits.h, shipped in the nvidia-cuda-cccl wheel),
and what the calculator then says on each architecture."""
import importlib.util
import re
from pathlib import Path

import pytest

from launchlab.core import hardware, occupancy

FIELDS = ("max_threads_per_multiprocessor", "max_blocks_per_multiprocessor", "max_shared_memory_per_multiprocessor",
          "reserved_shared_memory_per_block", "max_shared_memory_per_block_optin")


def arch_traits_header() -> Path:
    for root in importlib.util.find_spec("nvidia").submodule_search_locations:
        for p in sorted(Path(root).glob("cu*/include/cccl/cuda/__device/arch_traits.h")):
            return p
    raise FileNotFoundError("nvidia-cuda-cccl's cuda/__device/arch_traits.h (a dev dependency)")


def _value(expr: str, known: dict, cc: int) -> int:
    """An initializer of the header: `100 * 1024`, `2048`, `__traits.a - __traits.b`, or the common traits'
    `(__cc >= compute_capability{80}) ? 1024 : 0`."""
    m = re.fullmatch(r"\(__cc >= compute_capability\{(\d+)\}\) \? (\d+) : (\d+)", expr.strip())
    if m:
        return int(m.group(2)) if cc >= int(m.group(1)) else int(m.group(3))
    expr = re.sub(r"__traits\.(\w+)", lambda m: str(known[m.group(1)]), expr)
    if not re.fullmatch(r"[\d\s*+\-/]+", expr):
        raise ValueError(f"not an arithmetic initializer: {expr!r}")
    return int(eval(expr, {"__builtins__": {}}))           # digits and + - * / only, checked above


COMMON = ("max_threads_per_block", "max_registers_per_block", "max_registers_per_multiprocessor",
          "reserved_shared_memory_per_block", "warp_size")


def published() -> dict[tuple[int, int], dict[str, int]]:
    """{(major, minor): {field: value}} for every architecture the header defines field by field: its common
    traits (__common_arch_traits) overridden by the architecture's own."""
    text = arch_traits_header().read_text()
    common = re.search(r"__common_arch_traits\(arch_id __arch_id\) noexcept\s*\{(.*?)\n\}", text, re.S).group(1)
    out = {}
    for m in re.finditer(r"arch_traits<arch_id::sm_(\d+)>\(\) noexcept\s*\{(.*?)\n\};", text, re.S):
        n, body = int(m.group(1)), m.group(2)
        if "= ::cuda::arch_traits<" in body:          # an alias of another architecture (sm_90a, sm_103, ...)
            continue
        known: dict = {}
        for part in (common, body):
            for f, e in re.findall(r"__traits\.(\w+)\s*=\s*([^;]+);", part):
                if f in FIELDS or f in COMMON:
                    known[f] = _value(e, known, n)
        out[(n // 10, n % 10)] = known
    return out


def test_the_header_is_nvidias_table_and_covers_every_arch_the_course_targets():
    table = published()
    assert set(hardware.ARCH_LIMITS) <= set(table), sorted(set(hardware.ARCH_LIMITS) - set(table))
    assert table[(9, 0)]["max_shared_memory_per_multiprocessor"] == 228 * 1024       # a row anyone can check


@pytest.mark.parametrize("cc", sorted(hardware.ARCH_LIMITS), ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_each_architectures_limits_are_the_published_ones(cc):
    row = published()[cc]
    s = hardware.for_arch("x", 100, cc)
    assert (s.max_threads_per_sm, s.max_blocks_per_sm, s.smem_per_sm, s.reserved_smem_per_block,
            s.smem_per_block_optin) == tuple(row[f] for f in FIELDS)


@pytest.mark.parametrize("cc", sorted(hardware.ARCH_LIMITS), ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_what_every_architecture_shares_is_the_published_common_part(cc):
    row, s = published()[cc], hardware.for_arch("x", 100, cc)
    assert (s.max_threads_per_block, s.regs_per_block, s.regs_per_sm, s.reserved_smem_per_block, s.warp_size) == \
        tuple(row[f] for f in COMMON)


def test_the_h200_constant_is_its_architectures_limits():
    assert hardware.for_arch("NVIDIA H200", 132, (9, 0), hardware.H200.l2_bytes) == hardware.H200


def test_an_unknown_architecture_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match=r"compute capability \(7, 5\); known: 8.0, 8.6, 8.9, 9.0, 10.0, 12.0"):
        hardware.for_arch("T4", 40, (7, 5))


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
