"""Offline compilation: NVRTC from NVIDIA's cuda-bindings and nvidia-cuda-nvrtc wheels compiles a kernel
family to an sm_90 cubin with no driver and no GPU; `-Xptxas -v` reports registers, shared memory, stack and
spills per function (parsed here). A family with many slow variants compiles in parts, side by side."""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache

from launchlab.core.sass import disassemble, function_sass
from launchlab.core.sources import (CPP_STD, FAMILIES, FAMILY_OPTIONS, KERNEL_DIR, KernelError, parts, sha256s,
                                    source_path, workers)


# ---------------------------------------------------------------- offline: NVRTC -> cubin, no GPU needed
@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one function (per thread for registers/stack/spills, per block for smem)."""
    function: str
    registers: int
    smem_static: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    barriers: int


@dataclass
class OfflineBuild:
    family: str
    arch: str
    cubin: bytes
    log: str
    lowered: dict[str, str]                       # name expression -> mangled name
    resources: dict[str, Resources] = field(default_factory=dict)  # mangled name -> resources
    nvrtc_version: tuple[int, int] = (0, 0)
    more_cubins: tuple[bytes, ...] = ()            # a family compiled in parts (PARTS): the other parts' cubins

    def resources_of(self, expr: str) -> Resources:
        name = self.lowered.get(expr, expr)
        if name not in self.resources:
            raise KernelError(f"NVRTC {self.nvrtc_version[0]}.{self.nvrtc_version[1]} reported no ptxas resources "
                              f"for {expr} (the course pins nvidia-cuda-nvrtc 13.5, whose ptxas -v log it parses)")
        return self.resources[name]

    def sass(self, expr: str | None = None) -> str:
        """SASS of the cubin (one function if `expr` is given), via the cuobjdump/nvdisasm wheels."""
        cubins = (self.cubin, *self.more_cubins)
        if expr is None:
            return "\n".join(disassemble(c) for c in cubins)
        name = self.lowered.get(expr, expr)
        holds = [c for c in cubins if name.encode() in c] or cubins     # the part whose symbols name it
        return function_sass("\n".join(disassemble(c) for c in holds), name)


_PTXAS_FUNC = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers")
_PTXAS_BARRIERS = re.compile(r"used (\d+) barriers")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str) -> dict[str, Resources]:
    """Parse `ptxas -v` output into Resources per entry function."""
    out: dict[str, Resources] = {}
    current = None
    props = (0, 0, 0)
    for line in log.splitlines():
        m = _PTXAS_FUNC.search(line)
        if m:
            current, props = m.group(1), (0, 0, 0)
            continue
        m = _PTXAS_PROPS.search(line)
        if m and current:
            props = tuple(int(x) for x in m.groups())
            continue
        m = _PTXAS_USED.search(line)
        if m and current:
            regs = int(m.group(1))
            mb, ms = _PTXAS_BARRIERS.search(line), _PTXAS_SMEM.search(line)
            bars = int(mb.group(1)) if mb else 0
            smem = int(ms.group(1)) if ms else 0
            out[current] = Resources(current, regs, smem, props[0], props[1], props[2], bars)
            current = None
    return out


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:  # pragma: no cover - the course installs cuda-bindings everywhere
        raise KernelError("offline compilation needs NVIDIA's cuda-bindings and nvidia-cuda-nvrtc wheels "
                          "(make setup installs them)") from e
    return nvrtc


def _check(nvrtc, result, prog=None, what="nvrtc"):
    err = result[0] if isinstance(result, tuple) else result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        log = _program_log(nvrtc, prog) if prog is not None else ""
        raise KernelError(f"{what} failed: {err}\n{log}")
    return result[1:] if isinstance(result, tuple) and len(result) > 1 else None


def _program_log(nvrtc, prog) -> str:
    # NVRTC writes into the buffer it is given, so it must be a mutable one of our own. (`b" " * n` is not:
    # for n == 1 -- an empty log is just its terminator -- CPython returns its shared one-byte b" " object,
    # NVRTC writes a NUL into it, and every later b" " in the process is b"\x00". On Python 3.12, which builds
    # f-string literals through those shared objects, printed single spaces then turn into NULs.)
    err, n = nvrtc.nvrtcGetProgramLogSize(prog)
    buf = bytearray(n)
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return bytes(buf).decode(errors="replace").rstrip("\x00 \n")


def nvrtc_version() -> tuple[int, int]:
    nvrtc = _nvrtc()
    _, major, minor = nvrtc.nvrtcVersion()
    return int(major), int(minor)


@lru_cache(maxsize=64)
def _compile_offline_cached(family: str, digest: str, arch: str, exprs: tuple[str, ...],
                            extra: tuple[str, ...]) -> OfflineBuild:
    nvrtc = _nvrtc()
    src = source_path(family).read_bytes()
    err, prog = nvrtc.nvrtcCreateProgram(src, f"{family}.cu".encode(), 0, [], [])
    _check(nvrtc, (err,), what="nvrtcCreateProgram")
    try:
        for e in exprs:
            _check(nvrtc, nvrtc.nvrtcAddNameExpression(prog, e.encode()), what=f"name expression {e}")
        opts = [CPP_STD.encode(), f"-arch={arch}".encode(), b"-Xptxas=-v",
                f"-I{KERNEL_DIR}".encode(), *[x.encode() for x in extra]]
        res = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = _program_log(nvrtc, prog)
        if res[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise KernelError(f"NVRTC could not compile {family}.cu for {arch}:\n{log}")
        err, n = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = bytearray(n)
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        lowered = {}
        for e in exprs:
            err, name = nvrtc.nvrtcGetLoweredName(prog, e.encode())
            lowered[e] = name.decode() if isinstance(name, bytes) else str(name)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return OfflineBuild(family, arch, bytes(cubin), log, lowered, parse_ptxas_log(log), nvrtc_version())


@lru_cache(maxsize=16)
def _compile_offline_parts(family: str, digest: str, arch: str, split: tuple[tuple[str, ...], ...],
                           extra: tuple[str, ...]) -> OfflineBuild:
    with ThreadPoolExecutor(workers(len(split))) as pool:
        builds = list(pool.map(lambda ex: _compile_offline_cached(family, digest, arch, ex, extra), split))
    first = builds[0]
    return OfflineBuild(family, arch, first.cubin, "\n".join(b.log for b in builds),
                        {k: v for b in builds for k, v in b.lowered.items()},
                        {k: v for b in builds for k, v in b.resources.items()}, first.nvrtc_version,
                        tuple(b.cubin for b in builds[1:]))


def compile_offline(family: str, arch: str = "sm_90", extra_options: tuple[str, ...] = ()) -> OfflineBuild:
    """Compile a family to a cubin with NVRTC (no GPU, no driver). Cached per source hash. A family listed in
    PARTS is compiled as several programs at once and given back as one build (its cubins in more_cubins)."""
    digest = "".join(sha256s(family).values())
    extra = FAMILY_OPTIONS.get(family, ()) + tuple(extra_options)
    split = parts(family)
    if len(split) > 1:
        return _compile_offline_parts(family, digest, arch, tuple(split), extra)
    return _compile_offline_cached(family, digest, arch, FAMILIES.get(family, ()), extra)
