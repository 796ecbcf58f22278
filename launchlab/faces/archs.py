"""The GPUs learners have (issue 29): every kernel built for every architecture the course targets, and the
occupancy calculator's limits against NVIDIA's published table. No GPU needed.

    python -m launchlab archs            # the table: per architecture, families, entry points, SASS
    python -m launchlab archs --write    # ... and write data/archs/report.json (the summary's "gpus" reads it)

Builds. Every kernel family is compiled with NVRTC (the wheel; no nvcc) for sm_80, sm_86, sm_89, sm_90, sm_100
and sm_120 (hardware.ARCHS), with the same name expressions as the course's sm_90 build. For each
architecture the report keeps: the entry points (mangled names) -- they must be the sm_90 build's, one for
one -- and, per entry point, its SASS instruction count and whether it reaches global memory (a load, store or
atomic). "Non-trivial" is both: at least MIN_INSTRUCTIONS instructions and a global access, so a kernel whose
body the compiler dropped (an architecture #if gone wrong) fails. Where an architecture compiles a Hopper
instruction out (PDL's griddepcontrol, kernels/pdl.cuh: `__CUDA_ARCH__ >= 900`), the report lists the
entry points whose sm_90 SASS has the instruction and whose build for that architecture has none.

Calculator. hardware.ARCH_LIMITS against NVIDIA's machine-readable copy of the CUDA C++ Programming Guide's
"Technical Specifications per Compute Capability": CCCL's cuda/__device/arch_traits.h, read from NVIDIA's
nvidia-cuda-cccl wheel (a dev dependency). Every field the calculator uses is compared; the report names the
architectures checked and the header's version.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import sys
from pathlib import Path

from launchlab import sections
from launchlab.core import compiler, hardware, paths, sass, sources

REPORT = paths.ROOT / "data" / "archs" / "report.json"
BASE = "sm_90"                      # the course's build, recorded on the H200
MIN_INSTRUCTIONS = 10               # an empty kernel is ~3 (MOV, EXIT, BRA)
GLOBAL = re.compile(r"^(LDG|STG|LD\.|ST\.|RED|ATOM|LDGSTS|UBLKCP|UTMALDG)")
HOPPER_ONLY = ("ACQBULK", "PREEXIT")     # griddepcontrol.wait / .launch_dependents in sm_90 SASS


# ------------------------------------------------------------------ builds
def build(arch: str) -> dict:
    """{family: {entry point: {"instructions": n, "global": bool, "hopper_ops": [...]}}} for one architecture."""
    sections.all()                          # the families sections declare, beside the course's own
    out: dict[str, dict] = {}
    for fam in sources.all_families():
        b = compiler.compile_offline(fam, arch)
        listing = b.sass()
        fns = {}
        for expr, mangled in sorted(b.lowered.items()):
            ops = sass.sass_instructions(sass.function_sass(listing, mangled))
            fns[mangled] = {"expr": expr, "instructions": len(ops), "global": any(GLOBAL.match(o) for o in ops),
                            "hopper_ops": sorted({o.split(".")[0] for o in ops} & set(HOPPER_ONLY))}
        out[fam] = fns
    return out


def nontrivial(fn: dict) -> bool:
    return fn["instructions"] >= MIN_INSTRUCTIONS and fn["global"]


def compare(builds: dict[str, dict]) -> dict[str, dict]:
    """Per architecture: families, entry points, whether they are the sm_90 build's, the trivial ones, and the
    entry points whose Hopper-only instructions it compiles out."""
    base = builds[BASE]
    out = {}
    for arch, fams in builds.items():
        names = {(f, m) for f, fns in fams.items() for m in fns}
        base_names = {(f, m) for f, fns in base.items() for m in fns}
        trivial = sorted(f"{f}:{fn['expr']}" for f, fns in fams.items() for fn in fns.values() if not nontrivial(fn))
        dropped = sorted(f"{f}:{fn['expr']}" for f, fns in fams.items() for m, fn in fns.items()
                         if base.get(f, {}).get(m, {}).get("hopper_ops") and not fn["hopper_ops"])
        out[arch] = {"families": len(fams), "entry_points": len(names), "same_entry_points": names == base_names,
                     "trivial": trivial, "hopper_ops_compiled_out": dropped,
                     "min_instructions": min(fn["instructions"] for fns in fams.values() for fn in fns.values())}
    return out


def compiled(report: dict) -> list[str]:
    """The architectures every kernel built for with the sm_90 build's entry points, none trivial."""
    b = report["builds"]
    return [a for a in hardware.ARCHS if a in b and b[a]["same_entry_points"] and not b[a]["trivial"]]


# ------------------------------------------------------------------ the calculator against NVIDIA's table
FIELDS = {"max_threads_per_multiprocessor": "max_threads_per_sm", "max_blocks_per_multiprocessor": "max_blocks_per_sm",
          "max_shared_memory_per_multiprocessor": "smem_per_sm",
          "reserved_shared_memory_per_block": "reserved_smem_per_block",
          "max_shared_memory_per_block_optin": "smem_per_block_optin", "max_threads_per_block": "max_threads_per_block",
          "max_registers_per_block": "regs_per_block", "max_registers_per_multiprocessor": "regs_per_sm",
          "warp_size": "warp_size"}


def arch_traits_header() -> Path:
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations if spec else []):
        for p in sorted(Path(root).glob("cu*/include/cccl/cuda/__device/arch_traits.h")):
            return p
    raise FileNotFoundError("NVIDIA's table needs cuda/__device/arch_traits.h from the nvidia-cuda-cccl wheel "
                            "(a dev dependency: make setup installs it)")


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


def published(text: str | None = None) -> dict[tuple[int, int], dict[str, int]]:
    """{(major, minor): {field: value}} for every architecture the header defines field by field: its common
    traits (__common_arch_traits) overridden by the architecture's own."""
    text = arch_traits_header().read_text() if text is None else text
    common = re.search(r"__common_arch_traits\(arch_id __arch_id\) noexcept\s*\{(.*?)\n\}", text, re.S).group(1)
    out = {}
    for m in re.finditer(r"arch_traits<arch_id::sm_(\d+)>\(\) noexcept\s*\{(.*?)\n\};", text, re.S):
        n, body = int(m.group(1)), m.group(2)
        if "= ::cuda::arch_traits<" in body:          # an alias of another architecture (sm_90a, sm_103, ...)
            continue
        known: dict = {}
        for part in (common, body):
            for f, e in re.findall(r"__traits\.(\w+)\s*=\s*([^;]+);", part):
                if f in FIELDS:
                    known[f] = _value(e, known, n)
        out[(n // 10, n % 10)] = known
    return out


def calculator_differences(table: dict | None = None) -> dict[str, list[str]]:
    """{sm_XY: [field: ours vs NVIDIA's, ...]} for every architecture of hardware.ARCH_LIMITS ([] = agrees)."""
    table = published() if table is None else table
    out = {}
    for name, cc in hardware.ARCHS.items():
        if cc not in table:
            out[name] = ["not in NVIDIA's table"]
            continue
        ours = hardware.for_arch(name, 1, cc)
        out[name] = [f"{f}: {getattr(ours, attr)} vs {table[cc][f]}" for f, attr in FIELDS.items()
                     if getattr(ours, attr) != table[cc].get(f)]
    return out


# ------------------------------------------------------------------ the report
def report(only: list[str] | None = None) -> dict:
    unknown = sorted(set(only or ()) - set(hardware.ARCHS))
    if unknown:
        raise ValueError(f"no architecture {', '.join(unknown)} here; the course targets {', '.join(hardware.ARCHS)}")
    builds = {arch: build(arch) for arch in hardware.ARCHS if not only or arch in only or arch == BASE}
    diffs = calculator_differences()
    return {"nvrtc": ".".join(map(str, compiler.nvrtc_version())),
            "cccl": importlib.metadata.version("nvidia-cuda-cccl"),
            "builds": compare(builds),
            "calculator": {a: d for a, d in diffs.items() if a in builds},
            "entry_points": {a: {f: {m: fn for m, fn in fns.items()} for f, fns in b.items()}
                             for a, b in builds.items()}}


def load(path: Path = REPORT) -> dict:
    if not Path(path).exists():
        raise FileNotFoundError(f"no {Path(path).name} at {Path(path).parent}: python -m launchlab archs --write "
                                f"(no GPU needed) writes it")
    return json.loads(Path(path).read_text())


def headline(r: dict | None = None) -> dict:
    r = load() if r is None else r
    return {"archs_compiled": compiled(r),
            "calculator_archs_checked": sorted((a for a, d in r["calculator"].items() if not d),
                                               key=lambda a: hardware.ARCHS[a])}


def table(r: dict) -> str:
    rows = [f"NVRTC {r['nvrtc']}; NVIDIA's table from nvidia-cuda-cccl {r['cccl']}",
            f"{'arch':<7} {'families':>8} {'entry points':>12} {'= sm_90':>8} {'fewest instr':>12} "
            f"{'trivial':>7}  calculator  compiled out (Hopper-only)"]
    for a in (a for a in hardware.ARCHS if a in r["builds"]):
        b = r["builds"][a]
        calc = "agrees" if not r["calculator"][a] else "; ".join(r["calculator"][a])
        n = len(b["hopper_ops_compiled_out"])
        out = f"{n} entry points (PDL's griddepcontrol)" if n else "-"
        rows.append(f"{a:<7} {b['families']:>8} {b['entry_points']:>12} {str(b['same_entry_points']):>8} "
                    f"{b['min_instructions']:>12} {len(b['trivial']):>7}  {calc:<11} {out}")
    return "\n".join(rows)


def main(write: bool = False, only: list[str] | None = None) -> int:
    try:
        r = report(only)
    except (ValueError, FileNotFoundError) as e:
        print(f"archs: {e}", file=sys.stderr)
        return 2
    print(table(r))
    if write and only:
        print("archs: --write writes the whole report; leave out --only", file=sys.stderr)
        return 2
    if write:
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
        print(f"wrote {REPORT.relative_to(paths.ROOT)}")
    ok = len(compiled(r)) == len(r["builds"]) and not any(r["calculator"].values())
    return 0 if ok else 1
