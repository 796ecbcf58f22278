"""Live loading: a kernel family compiled and loaded through CuPy (RawModule: NVRTC + the driver) for the
GPU in this machine, and `Kernel`, a launchable kernel whose geometry is checked (launch.check) before every
launch; reloaded when its source files change."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import numpy as np

from launchlab.core import hardware, launch, mode
from launchlab.core import pdl as pdlpath
from launchlab.core.compiler import Resources, compile_offline
from launchlab.core.sources import (CPP_STD, FAMILIES, FAMILY_OPTIONS, KERNEL_DIR, PARTS, KernelError, files, parts,
                                    sha256s, source_path, workers)


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
        Inside a decode chain (launchlab.core.pdl.chain) the launch goes through the chain's path,
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
            with ThreadPoolExecutor(workers(len(split))) as pool:
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
            raise KernelError(f"{expr} is not among this family's name expressions (sources.FAMILIES)")
        return self._of[expr].get_function(expr)


def load_all(families=None) -> float:
    """Compile every family now, offline (NVRTC, for ptxas's report) and loaded (live), side by side; returns
    the seconds it took. Later calls find both in their caches."""
    t0 = time.perf_counter()
    fams = list(FAMILIES if families is None else families)
    jobs = [(compile_offline, f) for f in fams] + mode.choose(live=lambda: [(module, f) for f in fams],
                                                              replay=lambda: [])
    device = _current_device() if any(fn is module for fn, _ in jobs) else None

    def run(job):
        fn, fam = job
        if fn is module:
            _set_device(device)
        fn(fam)
    # the slow parted families first, so they are not left to run alone at the end
    jobs.sort(key=lambda j: -PARTS.get(j[1], 1))
    with ThreadPoolExecutor(workers(len(jobs))) as pool:
        list(pool.map(run, jobs))
    return time.perf_counter() - t0


def _current_device() -> int:
    import cupy
    return cupy.cuda.runtime.getDevice()


def _set_device(device: int) -> None:
    """A worker thread: the same GPU's context current."""
    import cupy
    cupy.cuda.runtime.setDevice(device)


def resources(family: str, expr: str) -> tuple[int, int]:
    """(registers per thread, static shared memory) of a kernel: from the loaded kernel in live mode (what
    actually runs), from the NVRTC offline compile in replay."""
    def loaded():
        k = kernel(family, expr)
        return k.registers, k.smem_static

    def offline():
        r = compile_offline(family).resources_of(expr)
        return r.registers, r.smem_static
    return mode.choose(live=loaded, replay=offline)


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
    except KernelError as e:
        missing = e

    def loaded():
        k = kernel(family, expr)
        r = Resources(b.lowered.get(expr, expr), k.registers, k.smem_static,
                      int(k.attributes.get("local_size_bytes", 0)), -1, -1, 0)
        return r, (f"as loaded by the driver (NVRTC {b.nvrtc_version[0]}.{b.nvrtc_version[1]} here gives no ptxas "
                   f"report)")

    def unknown():
        raise missing
    return mode.choose(live=loaded, replay=unknown)
