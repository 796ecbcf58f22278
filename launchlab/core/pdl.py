"""Programmatic dependent launch (Hopper): the decode chain's launch path -- the course's `k3_pdl_launch`.

A launch carrying the programmatic-stream-serialization attribute lets the GPU schedule the kernel while the
kernel before it in the stream is still running. The kernel then runs what depends on nothing the chain
writes (index math, launch parameters) and executes `griddepcontrol.wait`, which returns once its
predecessor has completed and its writes are visible; `griddepcontrol.launch_dependents` lets its own
successor be scheduled early (kernels/pdl.cuh says where each kernel of the chain does both). Without the
attribute both instructions are no-ops, so one build serves both arms. CUDA graph capture keeps the
programmatic edges, so a captured step keeps the overlap.

The decode chain is every launch made inside `chain()`: launchlab.kernels.decode runs each step inside one, and so do
§2's chains of 327 norms. There, `loader.Kernel.launch` (the launch check and the occupancy calculator as
for every launch) hands the kernel to `launch()` here, which calls the driver's cuLaunchKernelEx (NVIDIA's
cuda-bindings) on the CUfunction CuPy loaded, with the attribute set by two gates:

    LAUNCHLAB_PDL=1|0                  the chain's launches carry the attribute (1, the engine's path) or not
    LAUNCHLAB_PDL_OPT_OUT=none|FAMILY  one kernel family launched plainly in the middle of a PDL chain: the
                                       lecture's "optimization that quietly opts out of the launch
                                       infrastructure" (what it gives back: launchlab.sections.s06_one_binary.pdlchain)

Both arms go through cuLaunchKernelEx, so the attribute is the only difference between them. Outside a
chain, kernels launch through CuPy as before (§1, §3, §4 time single kernels; nothing precedes them that PDL
could overlap with). cuBLAS's GEMMs in the step are launched by cuBLAS and are not on this path: they start
only when the kernel before them has completed, as any plain launch does.
"""
from __future__ import annotations

import contextlib
import ctypes
import threading
from dataclasses import dataclass

import numpy as np

from launchlab.core import gates, mode

FAMILIES = gates.GATES["PDL_OPT_OUT"].choices[1:]      # the kernel families of the decode chain

# A scalar argument's bits in a 64-bit parameter slot (the driver copies the parameter's own size from the slot's
# address: the low bytes, little-endian), by its NumPy dtype.
_MASK32, _MASK64 = (1 << 32) - 1, (1 << 64) - 1
_BITS = {np.dtype(np.int32): lambda a: int(a) & _MASK32, np.dtype(np.uint32): int,
         np.dtype(np.int64): lambda a: int(a) & _MASK64, np.dtype(np.uint64): int,
         np.dtype(np.float32): lambda a: int(a.view(np.uint32)), np.dtype(np.float64): lambda a: int(a.view(np.uint64))}
MAX_PARAMS = 64

# Test only (kernels/pdl.cuh): loader.module("rms_norm", defines=(MISPLACED_DEFINE,)) is a separate build whose
# norms read x before they wait, with pdl_slow_writer to precede them. Never the course's build or a recording.
MISPLACED_DEFINE = "-DLAUNCHLAB_PDL_MISPLACED_WAIT"


class PDLError(RuntimeError):
    pass


# ------------------------------------------------------------------ the chain
_state = threading.local()


@contextlib.contextmanager
def chain():
    """Launches made inside go through the decode chain's launch path (nested chains are one chain)."""
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


def in_chain() -> bool:
    return getattr(_state, "depth", 0) > 0


def attribute_for(family: str) -> bool | None:
    """How a launch of `family` goes now: None outside a chain (CuPy's launch), else whether it carries the
    programmatic-stream-serialization attribute (LAUNCHLAB_PDL, less the opted-out family; never on a GPU older
    than sm_90, where the kernels' griddepcontrol is compiled out and the chain runs as plain launches)."""
    if not in_chain():
        return None
    return gates.value("PDL") == "1" and gates.value("PDL_OPT_OUT") != family and supported()


HOPPER = (9, 0)


def supported(compute_capability: tuple[int, int] | None = None) -> bool:
    """Whether a GPU of this compute capability (default: the current device's, live; the H200's in replay) runs
    PDL: sm_90 and later."""
    if compute_capability is None:
        compute_capability = mode.choose(live=_device_cc, replay=lambda: HOPPER)
    return tuple(compute_capability) >= HOPPER


_cc: dict[int, tuple[int, int]] = {}


def _device_cc() -> tuple[int, int]:  # pragma: no mutate block (live only)
    import cupy as cp
    d = cp.cuda.Device()
    if d.id not in _cc:
        cc = d.compute_capability                   # "90"
        _cc[d.id] = (int(cc[:-1]), int(cc[-1]))
    return _cc[d.id]


def note(compute_capability: tuple[int, int]) -> str:
    """What a notebook says about PDL on a GPU of this compute capability."""
    if supported(compute_capability):
        return ""
    return (f"this GPU is sm_{compute_capability[0]}{compute_capability[1]}: PDL needs sm_90, so the chain's "
            f"launches carry no programmatic-serialization attribute and the kernels' griddepcontrol is compiled "
            f"out (kernels/pdl.cuh) -- both arms run as plain launches here; the H200's recording shows the overlap")


# ------------------------------------------------------------------ the launch
_slots = threading.local()


def _buffers():
    """This thread's parameter slots and the void* array that points at them (built once, reused by every
    launch: the driver copies the parameters when the launch is made, or when a graph node is captured)."""
    b = getattr(_slots, "b", None)
    if b is None:
        words = (ctypes.c_uint64 * MAX_PARAMS)()
        base = ctypes.addressof(words)
        b = _slots.b = (words, (ctypes.c_void_p * MAX_PARAMS)(*[base + 8 * i for i in range(MAX_PARAMS)]))
    return b


def marshal(args) -> tuple[ctypes.Array, int]:
    """Write the kernel's parameters into this thread's slots: (void** kernelParams, how many). CuPy arrays
    become their device pointers, NumPy scalars their bits (by dtype). Anything else is refused before the
    launch."""
    if len(args) > MAX_PARAMS:
        raise PDLError(f"{len(args)} kernel parameters; the launch path takes at most {MAX_PARAMS}")
    words, params = _buffers()
    for i, a in enumerate(args):
        if isinstance(a, np.generic):
            bits = _BITS.get(a.dtype)
            if bits is not None:
                words[i] = bits(a)
                continue
        elif not isinstance(a, np.ndarray):
            ptr = getattr(getattr(a, "data", None), "ptr", None)
            if ptr is not None:
                words[i] = int(ptr)
                continue
        raise PDLError(f"argument {i}: {type(a).__name__} -- pass CuPy arrays and NumPy scalars "
                       f"(np.int32, np.float32, ...), as the kernel's C signature expects")
    return params, len(args)


def words(n: int) -> list[int]:
    """The first n parameter slots as written by the last marshal on this thread (what the driver will read)."""
    return list(_buffers()[0][:n])


def _dims(x) -> tuple[int, int, int]:
    t = tuple(int(v) for v in (x if isinstance(x, tuple) else (x,)))
    return t + (1,) * (3 - len(t))


_attrs: dict[bool, list] = {}


def _attr_list(pdl: bool) -> list:
    if pdl not in _attrs:
        from cuda.bindings import driver as drv
        if pdl:
            a = drv.CUlaunchAttribute()
            a.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            a.value.programmaticStreamSerializationAllowed = 1
            _attrs[pdl] = [a]
        else:
            _attrs[pdl] = []
    return _attrs[pdl]


# A decode step makes ~1,700 launches from a handful of geometries: the driver's config objects are built once
# per (grid, block, shared memory, stream, attribute) and the function handle once per kernel, not per launch.
_configs: dict[tuple, object] = {}
_functions: dict[int, object] = {}


def _config(grid, block, smem: int, stream_ptr: int, pdl: bool):
    key = (grid, block, smem, stream_ptr, pdl)
    cfg = _configs.get(key)
    if cfg is None:
        from cuda.bindings import driver as drv
        cfg = drv.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = _dims(grid)
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = _dims(block)
        cfg.sharedMemBytes = int(smem)
        cfg.hStream = drv.CUstream(stream_ptr)
        attrs = _attr_list(pdl)
        cfg.attrs = attrs
        cfg.numAttrs = len(attrs)
        if len(_configs) > 4096:
            _configs.clear()
        _configs[key] = cfg
    return cfg


def launch(raw, grid, block, args, smem: int = 0, stream=None, pdl: bool = True) -> None:
    """Launch CuPy RawKernel `raw` through cuLaunchKernelEx on `stream` (default: the current one), with the
    programmatic-stream-serialization attribute when `pdl`. The geometry is the caller's to check
    (loader.Kernel.launch does, before it calls this)."""
    mode.require_live("a launch on the decode chain's path")
    import cupy as cp
    from cuda.bindings import driver as drv
    params, _ = marshal(args)             # refuses bad arguments before anything reaches the driver
    stream = stream or cp.cuda.get_current_stream()
    cfg = _config(grid, block, int(smem), stream.ptr, bool(pdl))
    ptr = raw.kernel.ptr
    fn = _functions.get(ptr)
    if fn is None:
        fn = _functions[ptr] = drv.CUfunction(ptr)
    into = getattr(_watch, "recording", None)
    if into is not None:                   # recorded, not made (launchlab.core.stepgraph patches it into a graph)
        into.append(Recorded(ptr, _dims(grid), _dims(block), int(smem), tuple(words(len(args)))))
        return
    err, = drv.cuLaunchKernelEx(cfg, fn, ctypes.addressof(params), 0)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise PDLError(f"cuLaunchKernelEx: {err}")
    taps = getattr(_watch, "tapping", None)
    if taps is not None:
        taps.append(captured_node(stream))


# ------------------------------------------------------------------ a launch recorded, a captured launch's node
# launchlab.core.stepgraph captures one decode step and builds the graph of every later position from it: it
# needs the graph node of each launch whose arguments depend on the position (tapping, while capturing) and
# those launches' parameters at every other position (recording: the launch is worked out and checked as
# always, then kept instead of made).
_watch = threading.local()


@dataclass(frozen=True)
class Recorded:
    """A launch as the driver would have received it: the CUfunction, geometry, dynamic shared memory, and
    each parameter's 64-bit slot (the driver reads the parameter's own size from the slot, little-endian)."""
    function: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    words: tuple[int, ...]


@contextlib.contextmanager
def _watching(attr: str, into: list):
    if getattr(_watch, attr, None) is not None:
        raise PDLError(f"already {attr} launches on this thread")
    setattr(_watch, attr, into)
    try:
        yield into
    finally:
        setattr(_watch, attr, None)


def recording(into: list):
    """Launches on the chain's path inside are not made: each appends its Recorded to `into`."""
    return _watching("recording", into)


def tapping(into: list):
    """Launches on the chain's path inside are made, on a stream being captured: each appends its graph node."""
    return _watching("tapping", into)


def captured_node(stream):  # pragma: no mutate block (live only)
    """The node the last operation captured on `stream` made (the one node the stream's next capture will
    depend on)."""
    from cuda.bindings import driver as drv
    err, status, _, _, deps, _, n = drv.cuStreamGetCaptureInfo(drv.CUstream(stream.ptr))
    if err != drv.CUresult.CUDA_SUCCESS or status != drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE:
        raise PDLError(f"a tapped launch on a stream that is not being captured ({err}, {status})")
    if n != 1:
        raise PDLError(f"the stream's capture depends on {n} nodes after a launch, not 1")
    return deps[0]
