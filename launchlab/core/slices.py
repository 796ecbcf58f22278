"""This GPU with N SMs (issue 29): a green context holding every launch to N of the device's SMs.

    with slices.SMSlice(16) as s:               # the launches and events in this block run on 16 SMs
        tl = timeline.capture(...)              # any instrument of the course, unchanged
        s.prove(tl.sm)                          # the launch's %smid stamps: at most 16 distinct SMs, or SliceError

How, as measured on the H200 (docs/notes/green-contexts.md, data/gpu_runs/2026-12-02-h200-green-probe.txt):
the device's SM resource is split (cuDevSmResourceSplitByCount, one group of N), a green context is made of the
group (cuGreenCtxCreate), and a stream of that context (cuGreenCtxStreamCreate) becomes CuPy's current stream.
Every launch on that stream ran on exactly N SMs, whatever context was current, after CuPy array ops, and for a
module loaded inside. Pushing the green context current instead does not last: CuPy makes the primary context
current again when it loads a module or touches the device, and the launches then ran on all 132 SMs -- the
issue's "first context asked for 8 ran on all 132".

Inside a slice the rest of the course reads N: `hardware.from_device()` and the calculators' default "H200"
are the device cut to N SMs (the slice tells `hardware` on entry), every timing's note says "on N of the GPU's
132 SMs", and an instrument that makes a stream of its own (a CUDA graph's, the contention experiment's) takes
it from `stream()`: another stream of the same green context, ordered after the work already queued.

Which N: the device says (its SM resource's minSmPartitionSize and smCoscheduledAlignment; 8 and 8 on the H200,
132 SMs): 8, 16, ..., 128, and the whole device, which is its ordinary context rather than a green one. The
split itself rounds 12 up to 16 and turns 0 into 8 without an error, so `check` refuses those first, naming the
allowed values. Where green contexts are unavailable (a driver before CUDA 12.4, cuda-bindings without them),
a slice falls back to the whole GPU and says so in one line; it never does so silently.

A slice inside a slice is cut from the outer slice's SMs (cuGreenCtxGetDevResource of the outer green context,
then split), so it holds at most the outer one's N and its launches stay on the outer one's SMs; asking for more
is refused before anything is made. The innermost slice is the one every reader sees, until it is left.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

from launchlab.core import hardware, mode


class SliceError(ValueError):
    pass


@dataclass(frozen=True)
class Granularity:
    """The SM counts a device can be sliced into, from its SM resource."""
    sm_count: int                  # the whole device
    min_partition: int             # minSmPartitionSize
    alignment: int                 # smCoscheduledAlignment: a green partition is a multiple of it

    def allowed(self) -> list[int]:
        green = [n for n in range(self.min_partition, self.sm_count + 1) if n % self.alignment == 0]
        return green + ([self.sm_count] if self.sm_count not in green else [])

    def describe(self) -> str:
        a = self.allowed()
        green = [n for n in a if n != self.sm_count]
        listed = ", ".join(map(str, green[:3])) + (f", ..., {green[-1]}" if len(green) > 3 else "")
        return f"{listed}, or {self.sm_count} (the whole GPU)"


# cuDeviceGetDevResource(SM) on the lent H200 (driver 580.159.04), 2026-12-02: the recorded probe
# (data/gpu_runs/2026-12-02-h200-green-probe.json) holds these three numbers; tests/test_slices.py reads them there.
H200 = Granularity(sm_count=132, min_partition=8, alignment=8)


def check(n, g: Granularity = H200, within: int | None = None) -> int:
    """N as an SM count this device can be sliced into, or SliceError naming the allowed values. `within`: the SMs
    of the green slice this one is entered in (a slice inside a slice is cut from the outer one's SMs, so it holds
    at most as many)."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise SliceError(f"an SM count is a whole number, got {n!r}; this GPU allows {g.describe()}")
    n = int(n)
    if n in g.allowed():
        if within is not None and n > within:
            raise SliceError(f"{n} SMs inside a slice of {within}: a slice inside a slice is cut from the SMs of the "
                             f"one it is in, so it holds {within} at most")
        return n
    if n < g.min_partition:
        why = f"a slice holds at least {g.min_partition} SMs (the device's minSmPartitionSize)"
    elif n > g.sm_count:
        why = f"the GPU has {g.sm_count} SMs"
    else:
        why = (f"a slice is a multiple of {g.alignment} SMs (the device's smCoscheduledAlignment; the driver would "
               f"silently round {n} up to {-(-n // g.alignment) * g.alignment})")
    raise SliceError(f"{n} SMs: {why}; this GPU allows {g.describe()}")


def _drv():
    from cuda.bindings import driver
    return driver


def _ok(r):
    """cuda-bindings returns (err, *values): raise on an error, else the value (or the values)."""
    drv = _drv()
    err, *vals = r if isinstance(r, tuple) else (r,)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver: {err}")
    return vals[0] if len(vals) == 1 else (tuple(vals) if vals else None)


def _device_resource(device: int = 0):
    drv = _drv()
    dev = _ok(drv.cuDeviceGet(device))
    return dev, _ok(drv.cuDeviceGetDevResource(dev, drv.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM))


def granularity(device: int = 0) -> tuple[Granularity | None, str]:  # pragma: no mutate block (live only)
    """(the live device's granularity, "") -- or (None, why) where green contexts are unavailable here."""
    mode.require_live("reading the GPU's SM partitions")
    try:
        _, res = _device_resource(device)
    except (ImportError, AttributeError) as e:
        return None, f"this cuda-bindings has no green contexts ({e})"
    except RuntimeError as e:
        return None, f"the driver offers no SM partitions ({e}; green contexts need CUDA 12.4 or later)"
    return Granularity(int(res.sm.smCount), int(res.sm.minSmPartitionSize), int(res.sm.smCoscheduledAlignment)), ""


class _Handle:
    """A raw CUstream in the CUDA stream protocol, for CuPy's Stream.from_external."""
    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _cupy_stream(cp, handle: int):  # pragma: no mutate block (live only)
    """The green context's stream as a CuPy stream (Stream.from_external in CuPy 14, ExternalStream before)."""
    if hasattr(cp.cuda.Stream, "from_external"):
        return cp.cuda.Stream.from_external(_Handle(handle))
    return cp.cuda.ExternalStream(handle)


_active: list["SMSlice"] = []


def active() -> "SMSlice | None":
    """The innermost slice entered, if any."""
    return _active[-1] if _active else None


def green() -> "SMSlice | None":
    """The innermost slice entered if it is a green context (not the whole GPU, not a fallback)."""
    s = active()
    return s if s is not None and not s.whole else None


def stream():  # pragma: no mutate block (live only)
    """A fresh non-blocking CuPy stream where the launches on it stay in the current slice: a stream of the
    slice's green context inside one, an ordinary stream outside. The course's instruments that make their own
    stream (timing.graph, graph_cold, the contention experiment) take it from here; a CUDA graph captured and
    replayed on it ran on the slice's SMs (tests/test_slices.py proves it by %smid stamps)."""
    s = green()
    if s is None:
        import cupy as cp
        return cp.cuda.Stream(non_blocking=True)
    return s.new_stream()


def note() -> str:
    """What a timing measured now says about the SMs it had: '' on the whole GPU."""
    s = green()
    return "" if s is None else f"on {s.n} of the GPU's {s.granularity.sm_count} SMs (a green context)"


@dataclass
class SMSlice:
    """The GPU cut to `n` SMs for the launches inside the `with` block (see the module's docstring)."""
    n: int
    device: int = 0
    fallback: str = ""                       # why this slice is the whole GPU, when green contexts are unavailable
    granularity: Granularity | None = field(default=None, repr=False)
    _green: object = field(default=None, repr=False)
    _raw_stream: object = field(default=None, repr=False)
    _stream: object = field(default=None, repr=False)
    _more: list = field(default_factory=list, repr=False)     # streams made by new_stream(): (raw, CuPy's)

    @property
    def whole(self) -> bool:
        return self._green is None

    def __enter__(self) -> "SMSlice":  # pragma: no mutate block (live only)
        mode.require_live(f"a slice of {self.n} SMs")
        g, why = granularity(self.device)
        if g is None:
            whole = hardware.from_device().sm_count
            self.fallback = f"green contexts unavailable: {why}; running on the whole GPU ({whole} SMs), not {self.n}"
            print(f"SMSlice: {self.fallback}")
            self.n = whole
            _active.append(self)
            return self
        self.granularity = g
        outer = green()
        self.n = check(self.n, g, within=outer.n if outer is not None else None)
        if self.n != g.sm_count:
            import cupy as cp
            drv = _drv()
            dev, res = _device_resource(self.device)
            if outer is not None:             # a slice inside a slice: split the outer one's SMs, not the device's
                res = _ok(drv.cuGreenCtxGetDevResource(outer._green, drv.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM))
            groups, made, _rest = _ok(drv.cuDevSmResourceSplitByCount(1, res, 0, self.n))
            got = int(groups[0].sm.smCount) if made else 0
            if got != self.n:
                raise SliceError(f"asked the driver for {self.n} SMs and it split off {got}")
            desc = _ok(drv.cuDevResourceGenerateDesc([groups[0]], 1))
            self._green = _ok(drv.cuGreenCtxCreate(desc, dev, drv.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM))
            self._raw_stream = _ok(drv.cuGreenCtxStreamCreate(self._green, drv.CUstream_flags.CU_STREAM_NON_BLOCKING, 0))
            self._stream = _cupy_stream(cp, int(self._raw_stream))
            self._stream.__enter__()
            hardware._slices.append((self.n, g.sm_count))
        _active.append(self)
        return self

    def new_stream(self):  # pragma: no mutate block (live only)
        """Another non-blocking stream of this slice's green context, as a CuPy stream (destroyed on exit), after
        the work already queued on the slice's stream."""
        import cupy as cp
        if self._green is None:
            return cp.cuda.Stream(non_blocking=True)
        raw = _ok(_drv().cuGreenCtxStreamCreate(self._green, _drv().CUstream_flags.CU_STREAM_NON_BLOCKING, 0))
        s = _cupy_stream(cp, int(raw))
        self._more.append((raw, s))
        # a device-wide synchronize covers the primary context, not a green one: order what was queued on the
        # slice's stream so far before anything on the new one
        s.wait_event(cp.cuda.get_current_stream().record())
        return s

    def __exit__(self, *exc) -> None:  # pragma: no mutate block (live only)
        _active.remove(self)
        if self._green is None:
            return
        hardware._slices.remove((self.n, self.granularity.sm_count))
        drv = _drv()
        try:
            for _, s in self._more:
                s.synchronize()
            self._stream.synchronize()
        finally:
            self._stream.__exit__(*exc)
            for raw, _ in self._more:
                _ok(drv.cuStreamDestroy(raw))
            self._more.clear()
            _ok(drv.cuStreamDestroy(self._raw_stream))
            _ok(drv.cuGreenCtxDestroy(self._green))
            self._green = self._raw_stream = self._stream = None

    def prove(self, sm_ids) -> int:
        """The distinct SMs a launch's blocks ran on (its %smid stamps), checked against this slice: more than
        `n` means the launch escaped the slice, and the measurement is refused."""
        distinct = len(set(int(s) for s in sm_ids))
        if distinct > self.n:
            raise SliceError(f"a launch inside a slice of {self.n} SMs ran on {distinct} distinct SMs: it left the "
                             f"slice (was it launched on another stream?), so its time is not a {self.n}-SM time")
        return distinct

    def describe(self) -> str:
        if self.fallback:
            return f"the whole GPU ({self.n} SMs; {self.fallback})"
        if self.whole:
            return f"the whole GPU ({self.n} SMs, its ordinary context)"
        return f"{self.n} of {self.granularity.sm_count} SMs (a green context)"
