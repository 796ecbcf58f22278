"""The CUDA sources in kernels/, compiled two ways.

live      CuPy RawModule (NVRTC + the driver), for the GPU in this machine. `module(family)` gives the
          loaded module and `kernel(family, expr)` a launchable `Kernel` whose launches are checked first.
anywhere  NVRTC from NVIDIA's cuda-bindings and nvidia-cuda-nvrtc wheels compiles the same source to an
          sm_90 cubin with no driver and no GPU; `-Xptxas -v` reports registers, shared memory, stack and
          spills per function; the nvidia-cuda-cuobjdump/nvdisasm wheels turn the cubin into SASS.

A kernel family is one .cu file plus the headers it includes (all hashed into recordings) and the template
instantiations ("name expressions") the course launches.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import hardware, launch, mode, occupancy
from . import pdl as pdlpath

KERNEL_DIR = Path(os.environ.get("LAUNCHLAB_KERNELS", Path(__file__).resolve().parent.parent / "kernels"))
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
    "fma_forms": ("fma_tmp", "fma_inline", "fma_rn"),
    "fma_forms_strict": ("strict_tmp", "strict_inline", "strict_rn"),
    "mla_decode": ("mla_split", "mla_split_pipe", "mla_split_deep", "mla_combine"),
    "spin": ("spin_wait",),
    "kda_decode": ("kda_decode<0>", "kda_decode<1>", "kda_decode<2>", "kda_walk<0>", "kda_walk<1>", "kda_walk<2>",
                   "kda_walk<0, true>", "kda_walk<1, true>", "kda_decode<1, true>"),
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


def _workers(n: int) -> int:
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


def all_families() -> list[str]:
    return sorted(p.stem for p in KERNEL_DIR.glob("*.cu"))


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
    with ThreadPoolExecutor(_workers(len(split))) as pool:
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


# ---------------------------------------------------------------- SASS through the wheels' cuobjdump
def _cuda_bin_dirs() -> list[Path]:
    dirs = []
    try:
        import nvidia  # namespace package from the nvidia-* wheels
        for base in getattr(nvidia, "__path__", []):
            for sub in ("cu13/bin", "cuda_cuobjdump/bin", "cuda_nvdisasm/bin"):
                p = Path(base) / sub
                if p.is_dir():
                    dirs.append(p)
    except ImportError:
        pass
    return dirs


def tool(name: str) -> str | None:
    """Path of a CUDA binary tool (cuobjdump, nvdisasm): the wheels first, then PATH."""
    for d in _cuda_bin_dirs():
        if (d / name).exists():
            return str(d / name)
    return shutil.which(name)


@lru_cache(maxsize=32)        # a cuobjdump run is ~0.5 s; §2 asks for the same cubin's SASS once per arm
def disassemble(cubin: bytes) -> str:
    cuobjdump, nvdisasm = tool("cuobjdump"), tool("nvdisasm")
    if not cuobjdump or not nvdisasm:
        raise KernelError("SASS needs cuobjdump and nvdisasm (the nvidia-cuda-cuobjdump and "
                          "nvidia-cuda-nvdisasm wheels; make setup installs them)")
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(nvdisasm).parent), os.environ.get("PATH", "")]))
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([cuobjdump, "-sass", f.name], capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0:
        raise KernelError(f"cuobjdump failed: {r.stderr.strip()}")
    return r.stdout


def function_sass(sass: str, mangled: str) -> str:
    """The part of a cuobjdump listing that belongs to one function."""
    blocks = re.split(r"\n(?=\s*Function : )", sass)
    for b in blocks:
        if re.search(rf"Function : {re.escape(mangled)}\s", b + "\n"):
            return b
    raise KernelError(f"function {mangled} not in the SASS listing")


def sass_instructions(sass: str) -> list[str]:
    """The opcodes (with modifiers) of a SASS listing, e.g. 'LDG.E.128.CONSTANT'."""
    ops = []
    for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", sass):
        ops.append(m.group(1))
    return ops


@dataclass(frozen=True)
class Loop:
    """One loop of a SASS listing: the instructions from a conditional backward branch's target to the branch."""
    start: int
    end: int
    ops: tuple[str, ...]

    @property
    def global_loads(self) -> int:
        """LDG instructions in one trip: independent loads a thread can have in flight per iteration."""
        return sum(1 for o in self.ops if o.startswith("LDG"))

    @property
    def global_stores(self) -> int:
        return sum(1 for o in self.ops if o.startswith("STG"))


def loop_bodies(sass: str) -> list[Loop]:
    """The loops of one function's SASS, in address order: every predicated branch (@P / @!P) to a lower
    address closes one. Unpredicated backward jumps are left out -- they return from out-of-line code (a
    divergent shuffle's slow path), and the listing's final `BRA self` is padding."""
    rows = [(int(m.group(1), 16), m.group(2), m.group(3))
            for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)[^;]*;", sass)]
    loops = []
    for addr, pred, op in rows:
        if not pred or not op.startswith("BRA"):
            continue
        line = re.search(rf"/\*{addr:04x}\*/[^;]*;", sass).group(0)
        target = re.search(r"0x([0-9a-f]+)\s*;", line)
        if target and int(target.group(1), 16) < addr:
            t = int(target.group(1), 16)
            loops.append(Loop(t, addr, tuple(o for a, _, o in rows if t <= a <= addr)))
    return sorted(loops, key=lambda lp: lp.start)


# ---------------------------------------------------------------- live: CuPy RawModule
class Kernel:
    """A launchable kernel: its launch geometry is checked (launch.check) before every launch.

    Its attributes (registers, static shared memory, max threads per block) are read from the driver once,
    so a launch costs the check plus CuPy's own launch, a few microseconds of host time.
    """

    def __init__(self, family: str, expr: str, raw):
        self.family, self.expr, self.raw = family, expr, raw
        a = raw.attributes
        self.attributes = dict(a)
        self.registers = int(a["num_regs"])
        self.smem_static = int(a["shared_size_bytes"])
        self.max_threads_per_block = int(a["max_threads_per_block"])
        self._dyn_optin = int(a["max_dynamic_shared_size_bytes"])
        self._checked: dict[tuple, launch.Geometry] = {}   # (grid, block, smem) of plain ints -> its geometry

    def __repr__(self) -> str:
        return (f"Kernel({self.family}:{self.expr}, {self.registers} regs, {self.smem_static} B static smem, "
                f"max {self.max_threads_per_block} threads/block)")

    def launch(self, grid, block, args, smem: int = 0, stream=None, spec=None, pdl: bool | None = None):
        """Check the geometry against this kernel's registers/shared memory and the GPU, then launch.

        A bad geometry raises launch.LaunchError before anything reaches the driver, so the CUDA context
        (and the notebook's kernel) stays usable. Dynamic shared memory above 48 KiB is opted into here.
        Inside a decode chain (launchlab.pdl.chain) the launch goes through the chain's path,
        cuLaunchKernelEx, with or without the programmatic-dependent-launch attribute as the PDL gates say;
        `pdl` forces one or the other (True/False) anywhere.
        """
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                raise launch.LaunchError(
                    f"{self.expr}: argument {i} is a NumPy array ({a.dtype}, shape {a.shape}), which lives in host "
                    f"memory; a kernel reads device memory -- pass cupy.asarray(x) (and a NumPy scalar such as "
                    f"np.int32(n) for a scalar)")
        key = (grid, block, smem) if spec is None and _plain(grid) and _plain(block) and type(smem) is int else None
        geo = self._checked.get(key) if key is not None else None
        if geo is None:
            geo = launch.check(grid, block, smem, static_smem=self.smem_static, regs=self.registers,
                               max_threads=self.max_threads_per_block, gpu=spec or _live_spec())
            if key is not None and len(self._checked) < 4096:
                self._checked[key] = geo      # a geometry that passed once passes again: the check is pure
        if smem > self._dyn_optin:
            self.raw.max_dynamic_shared_size_bytes = smem
            self._dyn_optin = smem
        if pdl is None:
            pdl = pdlpath.attribute_for(self.family)
        if pdl is not None:
            pdlpath.launch(self.raw, geo.grid, geo.block, args, smem, stream, pdl=pdl)
        elif stream is None:
            self.raw(geo.grid, geo.block, args, shared_mem=smem)
        else:
            with stream:
                self.raw(geo.grid, geo.block, args, shared_mem=smem)
        return geo


def _plain(x) -> bool:
    """An int, or a tuple of ints (not bools, not NumPy scalars): a geometry whose check can be remembered."""
    return type(x) is int or (type(x) is tuple and all(type(v) is int for v in x))


@lru_cache(maxsize=1)
def _live_spec():
    return hardware.from_device()


_modules: dict[tuple[str, str], object] = {}
_kernels: dict[tuple, Kernel] = {}


_files_cache: dict[str, tuple[int, list[Path]]] = {}


def _stamp(family: str) -> tuple:
    """Cheap change detector for a family's files (mtime and size), so launches need not re-hash. The list
    of included headers is re-read only when the .cu file itself changes."""
    main_mtime = source_path(family).stat().st_mtime_ns
    cached = _files_cache.get(family)
    if cached is None or cached[0] != main_mtime:
        cached = _files_cache[family] = (main_mtime, files(family))
    return tuple((p.name, st.st_mtime_ns, st.st_size) for p in cached[1] for st in [p.stat()])


# A decode step asks for ~1,700 kernels: stat-ing every source file at each would cost more host time than
# the launch itself. The files are looked at again once this many seconds have passed for the family, so an
# edited kernel is still picked up at the next launch after a save.
RESTAT_S = 0.5
_stamps: dict[str, tuple[float, tuple]] = {}


def _current_stamp(family: str) -> tuple:
    now = time.monotonic()
    seen = _stamps.get(family)
    if seen is None or now - seen[0] > RESTAT_S:
        seen = _stamps[family] = (now, _stamp(family))
    return seen[1]


def module(family: str, defines: tuple[str, ...] = ()):
    """The family compiled and loaded through CuPy (live mode only). Cached per source hash. `defines`
    (-DNAME options) build a separate, test-only module (pdl.misplaced_module); launches through kernel()
    always use the course's build, which has none."""
    mode.require_live(f"loading kernels/{family}.cu")
    import cupy

    digest = "".join(sha256s(family).values())
    key = (family, digest) + tuple(defines)
    if key not in _modules:
        src = source_path(family).read_text()
        options = (CPP_STD, f"-I{KERNEL_DIR}", *FAMILY_OPTIONS.get(family, ()), *defines)
        split = parts(family)
        if len(split) == 1:
            _modules[key] = _load(cupy, src, options, split[0])
        else:
            device = cupy.cuda.runtime.getDevice()

            def load(exprs):
                cupy.cuda.runtime.setDevice(device)      # a worker thread: the same GPU's context current
                return _load(cupy, src, options, exprs)
            with ThreadPoolExecutor(_workers(len(split))) as pool:
                _modules[key] = _Parted(list(pool.map(load, split)), split)
    return _modules[key]


def _load(cupy, src: str, options: tuple, exprs: tuple[str, ...]):
    m = cupy.RawModule(code=src, options=options, name_expressions=list(exprs))
    m.compile()
    return m


class _Parted:
    """A family loaded as several modules (PARTS): get_function finds the module that holds the kernel."""

    def __init__(self, modules: list, split: list[tuple[str, ...]]):
        self._of = {e: m for m, exprs in zip(modules, split) for e in exprs}

    def get_function(self, expr: str):
        if expr not in self._of:
            raise KernelError(f"{expr} is not among this family's name expressions (kernels.FAMILIES)")
        return self._of[expr].get_function(expr)


def load_all(families=None) -> float:
    """Compile every family now, offline (NVRTC, for ptxas's report) and loaded (live), side by side; returns
    the seconds it took. Later calls find both in their caches."""
    t0 = time.perf_counter()
    fams = list(FAMILIES if families is None else families)
    jobs = [(compile_offline, f) for f in fams] + ([(module, f) for f in fams] if mode.is_live() else [])
    if mode.is_live():
        import cupy
        device = cupy.cuda.runtime.getDevice()

    def run(job):
        fn, fam = job
        if fn is module:
            cupy.cuda.runtime.setDevice(device)
        fn(fam)
    # the slow parted families first, so they are not left to run alone at the end
    jobs.sort(key=lambda j: -PARTS.get(j[1], 1))
    with ThreadPoolExecutor(_workers(len(jobs))) as pool:
        list(pool.map(run, jobs))
    return time.perf_counter() - t0


def resources(family: str, expr: str) -> tuple[int, int]:
    """(registers per thread, static shared memory) of a kernel: from the loaded kernel in live mode (what
    actually runs), from the NVRTC offline compile in replay."""
    if mode.is_live():
        k = kernel(family, expr)
        return k.registers, k.smem_static
    r = compile_offline(family).resources_of(expr)
    return r.registers, r.smem_static


def kernel(family: str, expr: str) -> Kernel:
    """A launchable kernel, reloaded only when its source files change."""
    key = (family, expr, _current_stamp(family))
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = Kernel(family, expr, module(family).get_function(expr))
    return k


def compiled_resources(family: str, expr: str) -> tuple[Resources, str]:
    """(resources, where they come from) of one variant: ptxas's report from the NVRTC compile; on a GPU
    machine whose NVRTC gives no ptxas report (the H200 image's 13.0, at times), the loaded kernel's
    attributes, with spills unknown (-1)."""
    b = compile_offline(family)
    try:
        return b.resources_of(expr), f"compiled by NVRTC {b.nvrtc_version[0]}.{b.nvrtc_version[1]} for sm_90"
    except KernelError:
        if not mode.is_live():
            raise
    k = kernel(family, expr)
    r = Resources(b.lowered.get(expr, expr), k.registers, k.smem_static,
                  int(k.attributes.get("local_size_bytes", 0)), -1, -1, 0)
    return r, f"as loaded by the driver (NVRTC {b.nvrtc_version[0]}.{b.nvrtc_version[1]} here gives no ptxas report)"


# ---------------------------------------------------------------- the source of one variant, on the page
@dataclass
class _Chunk:
    file: str
    order: int
    text: str                  # with the comment lines directly above it
    names: tuple[str, ...]     # what it defines
    is_global: bool
    has_body: bool


_IDENT = re.compile(r"[A-Za-z_]\w*")


def _chunks(path: Path, file_index: int) -> list[_Chunk]:
    """Split a CUDA source into its top-level pieces (preprocessor lines, declarations, definitions), each
    with the comment block directly above it and the names it defines."""
    src = path.read_text()
    out: list[_Chunk] = []
    i, n, depth, start = 0, len(src), 0, 0
    comment_start = None

    def emit(end: int):
        nonlocal start, comment_start
        body = src[start:end].strip("\n")
        head = src[comment_start:start] if comment_start is not None else ""
        text = (head + body).strip("\n")
        code = re.sub(r"//[^\n]*", "", body)
        names: list[str] = []
        if code.lstrip().startswith("#define"):
            names = [code.split()[1].split("(")[0]]
        elif code.lstrip().startswith("#"):
            names = []
        else:
            m = re.search(r"\bstruct\s+(\w+)", code.split("{")[0])
            if m:
                names = [m.group(1)]
            else:
                header = code.split("{")[0]
                m = re.search(r"(\w+)\s*(?:<[^()]*>)?\s*\(", header)
                if m:
                    names = [m.group(1)]
        out.append(_Chunk(path.name, file_index * 100000 + len(out), text, tuple(names),
                          "__global__" in code, "{" in code))
        start, comment_start = end, None

    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j + 1
            if depth == 0 and src[start:i].strip() == "":
                if comment_start is None:
                    comment_start = i
                start = j
            i = j
            continue
        c = src[i]
        if depth == 0 and c == "#" and src[start:i].strip() == "":
            j = src.find("\n", i)
            j = n if j < 0 else j
            start = i
            emit(j)
            i = j
            continue
        if depth == 0 and c == "\n" and src[start:i].strip() == "" and comment_start is not None:
            if src[comment_start:i].count("\n\n") or src.startswith("\n", i + 1):
                comment_start = None       # a blank line ends a comment block that belongs to nothing below
            start = i + 1
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                j = i + 1
                if src[j:].lstrip().startswith(";"):
                    j = src.index(";", j) + 1
                emit(j)
                i = j
                continue
        elif c == ";" and depth == 0:
            emit(i + 1)
        i += 1
    return out


@dataclass
class Source:
    """The CUDA source of exactly one launched variant: the kernel, the helpers and macros it uses from its
    family's files, which template arguments this variant binds, and what the compile gave it."""
    family: str
    expr: str
    bindings: dict
    code: str
    resources: Resources
    origin: str                # where the resources come from: the NVRTC compile, or the loaded kernel
    occupancy_line: str = ""

    def header(self) -> list[str]:
        r = self.resources
        bind = ", ".join(f"{k} = {v}" for k, v in self.bindings.items())
        spill = f", {r.spill_stores + r.spill_loads} B spilled" if r.spill_stores >= 0 else ""
        lines = [f"kernels/{self.family}.cu -- {self.expr}" + (f"  ({bind})" if bind else ""),
                 f"{self.origin}: {r.registers} registers/thread, {r.smem_static} B static shared memory, "
                 f"{r.stack_frame} B stack{spill}"]
        if self.occupancy_line:
            lines.append(self.occupancy_line)
        return lines

    def __str__(self) -> str:
        return "\n".join(self.header() + ["", self.code])

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        head = "  \n".join(f"`{h}`" if i == 0 else h for i, h in enumerate(self.header()))
        return f"{head}\n\n```cuda\n{self.code}\n```\n"


def show(family: str, expr: str, block: int | None = None) -> Source:
    """The CUDA source of the variant `expr` of kernels/<family>.cu as a notebook displays it: the kernel
    with the helpers and macros it uses (from the .cu file and its headers), the template arguments this
    variant binds, its registers and shared memory from the NVRTC compile, and (with `block`) its occupancy."""
    if expr not in FAMILIES.get(family, ()):
        raise KernelError(f"{expr!r} is not a variant the course launches from kernels/{family}.cu; "
                          f"known: {', '.join(FAMILIES.get(family, ())) or 'none'}")
    name = expr.split("<")[0].strip()
    args = [a.strip() for a in expr[len(name):].strip("<> ").split(",")] if "<" in expr else []
    chunks = [c for i, p in enumerate(files(family)) for c in _chunks(p, i)]
    body = next((c for c in chunks if c.is_global and c.has_body and name in c.names), None)
    if body is None:
        raise KernelError(f"no __global__ {name} with a body in kernels/{family}.cu")
    params = []
    m = re.search(r"template\s*<([^>]*)>", re.sub(r"//[^\n]*", "", body.text))
    if m:
        params = [p.split()[-1] for p in m.group(1).split(",") if p.strip()]
    defs = {}
    for c in chunks:
        if c is body or (c.is_global and not c.has_body):
            continue
        for nm in c.names:
            defs.setdefault(nm, []).append(c)
    used, todo = [], [body]
    while todo:
        c = todo.pop()
        for ident in set(_IDENT.findall(re.sub(r"//[^\n]*", "", c.text))):
            for d in defs.get(ident, []):
                if d not in used:
                    used.append(d)
                    todo.append(d)
    parts = sorted(used, key=lambda c: c.order) + [body]
    code = ""
    for prev, part in zip([None] + parts, parts):
        one_liner = lambda c: c is not None and c.text.startswith("#") and "\n" not in c.text   # noqa: E731
        code += ("\n" if one_liner(prev) and one_liner(part) else "\n\n" if prev is not None else "") + part.text
    r, origin = compiled_resources(family, expr)
    occ = ""
    if block is not None:
        occ = f"at block {block}: " + occupancy.occupancy(block, r.registers, r.smem_static).describe()
    return Source(family, expr, dict(zip(params, args)), code, r, origin, occ)
