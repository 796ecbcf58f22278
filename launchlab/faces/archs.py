"""The GPUs learners have (issue 29): every kernel built for every architecture the course targets, and the
occupancy calculator's limits against NVIDIA's published table. No GPU needed.

    python -m launchlab archs            # the table: per architecture, families, entry points, SASS
    python -m launchlab archs --write    # ... and write data/archs/report.json (the summary's "gpus" reads it)

Builds. Every kernel family is compiled with NVRTC (the wheel; no nvcc) for sm_70, sm_75, sm_80, sm_86, sm_89,
sm_90, sm_100 and sm_120 (hardware.ARCHS), with the same name expressions as the course's sm_90 build. A family
that cannot build for an architecture is named with NVRTC's reason in a learner's words (sm_75: MLA's bf16
tensor-core MMA and cp.async need sm_80; sm_70: CUDA 13's NVRTC no longer targets Volta). For each architecture
the report keeps: the entry points (mangled names) -- they must be the sm_90 build's, one for
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
from launchlab.core import compiler, hardware, paths, sass, sources, width

REPORT = paths.ROOT / "data" / "archs" / "report.json"
BASE = "sm_90"                      # the course's build, recorded on the H200
MIN_INSTRUCTIONS = 10               # an empty kernel is ~3 (MOV, EXIT, BRA)
GLOBAL = re.compile(r"^(LDG|STG|LD\.|ST\.|RED|ATOM|LDGSTS|UBLKCP|UTMALDG)")
HOPPER_ONLY = ("ACQBULK", "PREEXIT")     # griddepcontrol.wait / .launch_dependents in sm_90 SASS


# ------------------------------------------------------------------ builds
# What ptxas names when a kernel uses an instruction an architecture lacks, in a learner's words.
FEATURES = {".bf16": "bf16 arithmetic", ".m16n8k16": "the m16n8k16 tensor-core MMA",
            "cp.async": "cp.async (asynchronous copies to shared memory)"}
_FEATURE = re.compile(r"Feature '([^']+)' requires \.target (sm_\d+[a-z]?)")


def supported() -> list[str]:
    """The architectures this NVRTC compiles for (nvrtcGetSupportedArchs)."""
    _, found = compiler._nvrtc().nvrtcGetSupportedArchs()
    return [f"sm_{a}" for a in found]


def why_not(arch: str, error: str) -> str:
    """Why a family does not build for `arch`, in one line, from NVRTC's own error."""
    found = list(dict.fromkeys(_FEATURE.findall(error)))          # in the order NVRTC met them
    if found:
        need = sorted({t for _, t in found}, key=lambda t: (int(re.match(r"\d+", t[3:]).group()), t))
        names = list(dict.fromkeys(FEATURES.get("cp.async" if f.startswith("cp.async") else f, f) for f, _ in found))
        return f"needs {' / '.join(need)}: {', '.join(names)}"
    first = next((ln.strip() for ln in error.splitlines()[1:] if ln.strip()), error.strip())
    return first[:160]


def build(arch: str) -> tuple[dict, dict]:
    """({family: {entry point: {"instructions": n, "global": bool, "hopper_ops": [...]}}}, {family: why it does
    not build}) for one architecture. An architecture this NVRTC does not target builds nothing, said once per
    family."""
    sections.all()                          # the families sections declare, beside the course's own
    out: dict[str, dict] = {}
    cannot: dict[str, str] = {}
    fams = sources.all_families()
    targets = supported()
    if arch not in targets:
        v = ".".join(map(str, compiler.nvrtc_version()))
        why = (f"NVRTC {v} does not target {arch} (it targets {targets[0]} to {targets[-1]}); "
               f"CUDA 12's NVRTC does")
        return {}, {fam: why for fam in fams}
    for fam in fams:
        try:
            b = compiler.compile_offline(fam, arch)
        except compiler.KernelError as e:
            cannot[fam] = why_not(arch, str(e))
            continue
        listing = b.sass()
        fns = {}
        for expr, mangled in sorted(b.lowered.items()):
            ops = sass.sass_instructions(sass.function_sass(listing, mangled))
            fns[mangled] = {"expr": expr, "instructions": len(ops), "global": any(GLOBAL.match(o) for o in ops),
                            "hopper_ops": sorted({o.split(".")[0] for o in ops} & set(HOPPER_ONLY))}
        out[fam] = fns
    return out, cannot


def nontrivial(fn: dict) -> bool:
    return fn["instructions"] >= MIN_INSTRUCTIONS and fn["global"]


def compare(builds: dict[str, dict], cannot: dict[str, dict] | None = None) -> dict[str, dict]:
    """Per architecture: families, entry points, whether they are the sm_90 build's (for the families it builds),
    the trivial ones, the entry points whose Hopper-only instructions it compiles out, and the families it cannot
    build with the reason."""
    base, cannot = builds[BASE], cannot or {}
    out = {}
    for arch, fams in builds.items():
        skip = cannot.get(arch, {})
        names = {(f, m) for f, fns in fams.items() for m in fns}
        base_names = {(f, m) for f, fns in base.items() for m in fns if f not in skip}
        trivial = sorted(f"{f}:{fn['expr']}" for f, fns in fams.items() for fn in fns.values() if not nontrivial(fn))
        dropped = sorted(f"{f}:{fn['expr']}" for f, fns in fams.items() for m, fn in fns.items()
                         if base.get(f, {}).get(m, {}).get("hopper_ops") and not fn["hopper_ops"])
        out[arch] = {"families": len(fams), "entry_points": len(names), "same_entry_points": names == base_names,
                     "trivial": trivial, "hopper_ops_compiled_out": dropped, "cannot": dict(sorted(skip.items())),
                     "min_instructions": min((fn["instructions"] for fns in fams.values() for fn in fns.values()),
                                             default=0)}
    return out


def compiled(report: dict) -> list[str]:
    """The architectures every kernel built for with the sm_90 build's entry points, none trivial."""
    b = report["builds"]
    return [a for a in hardware.ARCHS if a in b and b[a]["same_entry_points"] and not b[a]["trivial"]
            and not b[a].get("cannot")]


def partly(report: dict) -> dict[str, dict[str, str]]:
    """{arch: {family: why}} for the architectures some family does not build for."""
    return {a: b["cannot"] for a, b in report["builds"].items() if b.get("cannot")}


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
    made = {arch: build(arch) for arch in hardware.ARCHS if not only or arch in only or arch == BASE}
    builds = {a: m[0] for a, m in made.items()}
    diffs = calculator_differences()
    return {"nvrtc": ".".join(map(str, compiler.nvrtc_version())),
            "cccl": importlib.metadata.version("nvidia-cuda-cccl"),
            "builds": compare(builds, {a: m[1] for a, m in made.items()}),
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
            "archs_partly_built": sorted(partly(r), key=lambda a: hardware.ARCHS[a]),
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
        same = str(b["same_entry_points"]) if b["families"] else "-"
        rows.append(f"{a:<7} {b['families']:>8} {b['entry_points']:>12} {same:>8} "
                    f"{b['min_instructions']:>12} {len(b['trivial']):>7}  {calc:<11} {out}")
    for a, c in partly(r).items():
        whys: dict[str, list[str]] = {}
        for fam, why in c.items():
            whys.setdefault(why, []).append(fam)
        for why, fams in whys.items():
            what = "nothing built" if not r["builds"][a]["families"] else f"{', '.join(fams)} not built"
            rows.append(width.fit(f"{a}: {what} -- {why}", hang=4))
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
    ok = all(r["builds"][a]["same_entry_points"] and not r["builds"][a]["trivial"] for a in r["builds"]) \
        and not any(r["calculator"].values())
    return 0 if ok else 1
