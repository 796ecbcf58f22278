"""The CUDA sources in kernels/: the kernel families, the files each includes, and their hashes.

A kernel family is one .cu file plus the headers it includes (all hashed into recordings) and the template
instantiations ("name expressions") the course launches. Compiling them is `compiler`'s job (offline, NVRTC,
no GPU) and `loader`'s (live, CuPy); reading their machine code is `sass`'s; showing one variant's source is
`listing`'s.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from launchlab.core import paths

KERNEL_DIR = Path(os.environ.get("LAUNCHLAB_KERNELS", paths.ROOT / "kernels"))
CPP_STD = "-std=c++17"

# Every family the course launches, with the instantiations it needs. tests/test_kernels.py checks that every
# .cu file in kernels/ is listed here and compiles offline.
FAMILIES: dict[str, tuple[str, ...]] = {
    "stream_read": ("stream_read<1, 1>", "stream_read<4, 1>", "stream_read<1, 4>", "stream_read<4, 4>",
                    "stream_read_timeline<4, 4>"),
    "waves": ("fixed_work", "fixed_bytes", "fixed_work_timeline"),
    "timeline": ("globaltimer_ticks",),
    "decode_ops": ("embed_row", "to_bf16", "add_inplace", "silu_mul_to_bf16", "kda_prep", "mla_rope_pack",
                   "argmax_f32"),
    "residual_add": ("add_inplace_ept",),
    "fma_forms": ("fma_tmp", "fma_inline", "fma_rn"),
    "fma_forms_strict": ("strict_tmp", "strict_inline", "strict_rn"),
    "mla_decode": ("mla_split", "mla_split_pipe", "mla_split_deep", "mla_combine"),
    "spin": ("spin_wait",),
    "kda_decode": ("kda_decode<0>", "kda_decode<1>", "kda_decode<2>", "kda_walk<0>", "kda_walk<1>", "kda_walk<2>",
                   "kda_walk<0, true>", "kda_walk<1, true>", "kda_decode<1, true>"),
    "kda_contrast": ("kda_column",),
    "rms_norm": ("rms_norm_f32", "rms_norm_wide<false>", "rms_norm_wide<true>", "rms_norm_wide_reduce<false>",
                 "rms_norm_wide_reduce<true>", "rms_norm_f32_chain", "rms_norm_wide_chain<false>",
                 "rms_norm_wide_chain<true>"),
    "occupancy_probe": tuple(
        f"occupancy_probe<{r}, {s}>"
        for r, s in [(16, 0), (24, 0), (32, 0), (40, 0), (48, 0), (56, 0), (64, 0), (72, 0), (80, 0),
                     (90, 0), (96, 0), (112, 0), (128, 0), (129, 0), (152, 0), (168, 0), (170, 0), (200, 0),
                     (232, 0), (250, 0), (255, 0), (37, 0), (42, 0),
                     (32, 1024), (32, 8192), (32, 20000), (64, 4096), (64, 32768), (128, 12288),
                     (128, 48000)]
    ),
}

# A family whose variants are slow to compile is compiled in this many parts, side by side (NVRTC releases the
# GIL): the occupancy probe's 30 register caps are 30 spill-heavy ptxas runs, ~22 s in one program on one core
# and most of the course's compile time. Each part is its own program (offline) and its own module (live);
# a kernel is looked up in the part that holds it.
PARTS: dict[str, int] = {"occupancy_probe": 10}


def parts(family: str) -> list[tuple[str, ...]]:
    """The family's name expressions, split into the programs it is compiled as (one, for most)."""
    exprs = FAMILIES.get(family, ())
    n = min(PARTS.get(family, 1), max(1, len(exprs)))
    return [exprs] if n == 1 else [exprs[i::n] for i in range(n)]


def workers(n: int) -> int:
    return max(1, min(n, os.cpu_count() or 1, 16))


# Compile options scoped to one file (family), in both the live and the offline build.
FAMILY_OPTIONS: dict[str, tuple[str, ...]] = {"fma_forms_strict": ("-fmad=false",)}


class KernelError(RuntimeError):
    pass


# ---------------------------------------------------------------- sources and their hashes
def source_path(family: str) -> Path:
    p = KERNEL_DIR / f"{family}.cu"
    if not p.exists():
        raise KernelError(f"no kernel source {p}")
    return p


def files(family: str) -> list[Path]:
    """The .cu file and every header it includes from kernels/ (recursively), in a stable order."""
    seen: list[Path] = []

    def walk(p: Path) -> None:
        if p in seen:
            return
        seen.append(p)
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', p.read_text(), flags=re.M):
            q = KERNEL_DIR / inc
            if not q.exists():
                raise KernelError(f"{p.name} includes {inc!r}, which is not in {KERNEL_DIR}")
            walk(q)

    walk(source_path(family))
    return seen


def sha256s(family: str) -> dict[str, str]:
    """{file name: sha256 of its bytes} for the family's source and headers."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files(family)}


def declare(family: str, exprs: tuple[str, ...]) -> None:
    """A kernel family a section brings itself (its manifest's `families`), added beside the course's own."""
    if FAMILIES.get(family, exprs) != exprs:
        raise KernelError(f"kernel family {family} is declared twice with different name expressions")
    FAMILIES[family] = tuple(exprs)


def all_families() -> list[str]:
    return sorted(p.stem for p in KERNEL_DIR.glob("*.cu"))


