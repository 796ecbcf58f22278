"""The audit's step 1: every kernel launch of a program, read from a profiler's record of it.

Two records are read, both made by CUPTI's activity API on the GPU the program ran on:
- torch.profiler's Chrome trace (`prof.export_chrome_trace`, plain or gzipped): Kineto writes each kernel as an
  event of category "kernel" whose args hold `grid`, `block`, `registers per thread`, `shared memory` (static plus
  dynamic: Kineto adds them), `stream`, and two figures of its own -- `blocks per SM` (the grid's blocks / the
  SMs, not the resident blocks) and `est. achieved occupancy %` (min(resident, blocks / SMs) x threads per block /
  threads per SM, from CUDA's occupancy calculator); the GPU is the trace's `deviceProperties`. A step is a
  `record_function` range (default name STEP_MARK), found on the GPU's timeline as a "gpu_user_annotation".
  (pytorch/kineto: libkineto/src/CuptiActivity.cpp metadataJson, DeviceProperties.cpp.)
- a CUPTI record (cupti-python's CONCURRENT_KERNEL activity, as launchlab.audit.profilers writes it): the same
  fields per kernel, static and dynamic shared memory apart, times in ns, and the GPU it ran on.

Every launch keeps what the record says and nothing is guessed: a figure a record does not give is None.
"""
from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from launchlab.core import hardware

STEP_MARK = "launchlab.audit.step"


class AuditError(ValueError):
    """A record the audit cannot read, or one that holds nothing to audit: said before any table is built."""


@dataclass(frozen=True)
class Launch:
    name: str                          # the kernel as the record names it (demangled by Kineto; CUPTI's own name)
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers: int                     # per thread
    smem: int                          # static + dynamic shared memory per block, bytes
    stream: int
    start_us: float                    # from the record's first kernel (whole µs), exact to its own digits
    dur_us: float
    step: int | None = None            # which marked step it ran in (None: outside every mark, or none marked)
    static_smem: int | None = None     # where the record keeps them apart (CUPTI)
    dynamic_smem: int | None = None
    reported_blocks_per_sm: float | None = None     # the record's own figure (Kineto's: blocks / SMs)
    reported_occupancy_pct: int | None = None       # Kineto's estimate
    graph_id: int = 0                  # CUPTI: launched from a CUDA graph

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass
class Trace:
    """The launches of `steps` repetitions of a program's step on one GPU."""
    gpu: hardware.GPUSpec              # the GPU the record was made on (its own SM count and limits)
    launches: list[Launch]
    steps: int
    tool: str                          # "torch.profiler" or "cupti-python"
    source: str = ""                   # where it was read from
    notes: list[str] = field(default_factory=list)
    steps_from: str = ""               # what made the steps: the mark read ("launchlab.audit.step", "ProfilerStep#N",
                                       # a --mark prefix with "*"), "count given" or "recorder's count"

    @property
    def in_steps(self) -> list[Launch]:
        """The launches inside the marked steps (every launch when none were marked)."""
        marked = [x for x in self.launches if x.step is not None]
        return marked if marked else self.launches


def _dims(v, what: str) -> tuple[int, int, int]:
    if not isinstance(v, (list, tuple)) or not 1 <= len(v) <= 3 or not all(isinstance(x, int) and x >= 1 for x in v):
        raise AuditError(f"{what} must be 1 to 3 positive integers, the record has {v!r}")
    return tuple(v) + (1,) * (3 - len(v))


def gpu_from_properties(p: dict) -> hardware.GPUSpec:
    """The GPU a torch trace was made on, from its `deviceProperties`: the record's own SM count, registers, threads
    and shared memory; the blocks-per-SM limit (which the trace does not carry) is the architecture's published one
    (hardware.ARCH_LIMITS)."""
    try:
        cc = (int(p["computeMajor"]), int(p["computeMinor"]))
        name, sms = str(p["name"]), int(p["numSms"])
    except (KeyError, TypeError, ValueError):
        raise AuditError(f"the trace's deviceProperties lack the GPU's name, SM count or compute capability: {p!r}") \
            from None
    try:
        base = hardware.for_arch(name, sms, cc)
    except ValueError as e:
        raise AuditError(f"{name}: {e}") from None
    from dataclasses import replace
    return replace(base, warp_size=int(p.get("warpSize", base.warp_size)),
                   max_threads_per_block=int(p.get("maxThreadsPerBlock", base.max_threads_per_block)),
                   max_threads_per_sm=int(p.get("maxThreadsPerMultiprocessor", base.max_threads_per_sm)),
                   regs_per_sm=int(p.get("regsPerMultiprocessor", base.regs_per_sm)),
                   regs_per_block=int(p.get("regsPerBlock", base.regs_per_block)),
                   smem_per_sm=int(p.get("sharedMemPerMultiprocessor", base.smem_per_sm)),
                   smem_per_block=int(p.get("sharedMemPerBlock", base.smem_per_block)),
                   smem_per_block_optin=int(p.get("sharedMemPerBlockOptin", base.smem_per_block_optin)))


KERNEL_CATS = ("kernel", "Kernel")                  # "Kernel": older Kineto traces
RUNTIME_CATS = ("cuda_runtime", "cuda_driver", "Runtime")
PROFILER_STEP = "ProfilerStep#"                     # torch.profiler's schedule: one CPU range per step
NVIDIA_ONLY = "the audit's occupancy calculator and limits are NVIDIA's, so it audits NVIDIA GPUs only"
NOT_NVIDIA = (("AMD", "an AMD GPU (ROCm)"), ("Radeon", "an AMD GPU (ROCm)"), ("Instinct", "an AMD GPU (ROCm)"),
              ("ARTEMIS", "a Meta MTIA accelerator"), ("MTIA", "a Meta MTIA accelerator"))


class _Stamp(float):
    """A JSON number with more digits than a float holds exactly -- Kineto's timestamps in µs since the epoch with
    a fractional part (1712195495505583.123): as a float it is 0.25 µs coarse, and a step's kernel intervals then
    overlap or part by rounding alone. The text is kept, so that times measured from the trace's own start are
    exact (_Clock)."""
    text: str


def _parse_float(text: str) -> float:
    f = float(text)
    if len(text) <= 15 or "e" in text or "E" in text:
        return f
    s = _Stamp(f)
    s.text = text
    return s


class _Clock:
    """Times in µs from `origin` (a whole µs at or before the trace's first kernel), exact for _Stamp values."""

    def __init__(self, values):
        self.origin = min((self.whole(v) for v in values), default=0)

    @staticmethod
    def whole(v) -> int:
        if isinstance(v, _Stamp) and "." in v.text:
            return int(v.text.split(".", 1)[0])
        return math.floor(float(v))

    def __call__(self, v) -> float:
        if isinstance(v, _Stamp) and "." in v.text:
            whole, frac = v.text.split(".", 1)
            return float(int(whole) - self.origin) + float("0." + frac) * (-1 if whole.startswith("-") else 1)
        return float(v) - self.origin


def _read_json(path) -> dict:
    p = Path(path)
    if not p.exists():
        raise AuditError(f"no record at {p}")
    if p.is_dir():
        raise AuditError(f"{p} is a directory: give the trace file in it (a .json or .json.gz)")
    raw = p.read_bytes()
    try:
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError, zlib.error) as e:
        raise AuditError(f"{p} is not a JSON record (plain or gzipped): truncated or damaged gzip ({e})") from None
    if re.search(rb'"cat":\s*"mtia_', text) and not re.search(rb'"cat":\s*"[Kk]ernel"', text):
        # refused before parsing: an 87 MB MTIA trace takes 670 MB as Python objects
        raise AuditError(f"{p} was recorded on a Meta MTIA accelerator (mtia_* events): {NVIDIA_ONLY}")
    try:
        return json.loads(text, parse_float=_parse_float)
    except (OSError, EOFError, zlib.error, ValueError) as e:
        why = "truncated or damaged gzip" if raw[:2] == b"\x1f\x8b" and not isinstance(e, ValueError) else str(e)
        raise AuditError(f"{p} is not a JSON record (plain or gzipped): {why}") from None


def _platform(props: list, events: list, source: str) -> None:
    """Refuse a trace made on something other than an NVIDIA GPU, by name, before any arithmetic: its compute
    capability (an AMD gfx90a reports 9.0) would otherwise pass for an NVIDIA architecture's."""
    for p in props:
        name = str(p.get("name", ""))
        for word, what in NOT_NVIDIA:
            if word.lower() in name.lower():
                raise AuditError(f"{source or 'the trace'} was recorded on {what} ('{name}'): {NVIDIA_ONLY}")
    if any(isinstance(e, dict) and str(e.get("cat", "")).startswith("mtia") for e in events):
        raise AuditError(f"{source or 'the trace'} was recorded on a Meta MTIA accelerator (mtia_* events): "
                         f"{NVIDIA_ONLY}")


def _ranges(events: list, mark: str, exact: bool, clock) -> tuple[list, str]:
    """The step ranges named `mark` (`exact`: the whole name; else a prefix), GPU-side ranges first (a
    record_function's gpu_user_annotation), else CPU-side ones: ([(start, end)], 'gpu' or 'cpu')."""
    def named(e):
        n = str(e.get("name", ""))
        return n == mark if exact else n.startswith(mark)
    for cat, side in (("gpu_user_annotation", "gpu"), ("user_annotation", "cpu")):
        r = sorted((clock(e["ts"]), clock(e["ts"]) + float(e.get("dur", 0))) for e in events
                   if e.get("cat") == cat and e.get("ph", "X") == "X" and named(e) and "ts" in e)
        if r:
            return r, side
    return [], ""


def from_torch(doc: dict, steps: int | None = None, mark: str | None = None, source: str = "",
               device: int | None = None) -> Trace:
    """A torch.profiler Chrome trace. Its steps: the `mark` ranges (a name prefix) if one is given; else the
    course's `launchlab.audit.step` ranges; else torch.profiler's own `ProfilerStep#N`; else `steps` (default 1)
    repetitions make up the whole trace. A kernel belongs to the step whose GPU range holds it, or, for a CPU range
    (ProfilerStep#N), whose range holds its launch (the runtime call with the kernel's correlation id); kernels
    outside every step are left out, and a note counts them."""
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        raise AuditError(f"{source or 'the record'} has no traceEvents: not a torch.profiler Chrome trace")
    odd = sum(1 for e in events if not isinstance(e, dict))
    events = [e for e in events if isinstance(e, dict)]
    props = [p for p in (doc.get("deviceProperties") or []) if isinstance(p, dict)]
    _platform(props, events, source)
    kernels = [e for e in events if e.get("cat") in KERNEL_CATS and e.get("ph") == "X" and "ts" in e]
    if not kernels and any(e.get("cat") == "cuda_profiler_range" for e in events):
        raise AuditError(f"{source or 'the trace'} holds CUPTI range-profiler events (cuda_profiler_range: metrics "
                         f"per kernel, no launch geometry), not kernel activity: record again with "
                         f"torch.profiler's activities=[ProfilerActivity.CUDA] and no profiler_metrics")
    if not kernels:
        raise AuditError(f"{source or 'the trace'} holds no kernel launch: the profiled code launched none on the "
                         f"GPU, or the profiler ran without ProfilerActivity.CUDA")
    with_geometry = [e for e in kernels if isinstance(e.get("args"), dict) and "grid" in e["args"]
                     and "block" in e["args"]]
    if not with_geometry:
        raise AuditError(f"{source or 'the trace'} has {len(kernels)} kernel events but no launch geometry (no grid "
                         f"or block in their args): its profiler did not record it. Record the program again with a "
                         f"current torch.profiler (ProfilerActivity.CUDA), whose kernel events carry grid and block")
    devices = sorted({int(e["args"].get("device", 0)) for e in with_geometry})
    if device is None and len(devices) > 1:
        raise AuditError(f"the trace's kernels ran on {len(devices)} GPUs ({devices}): pick one with --device N")
    dev = devices[0] if device is None else device
    if dev not in devices:
        raise AuditError(f"no kernel of the trace ran on GPU {dev}; its kernels ran on {devices}")
    prop = next((p for p in props if int(p.get("id", -1)) == dev), None)
    if prop is None:
        raise AuditError(f"the trace has no deviceProperties for GPU {dev}: its SM count is unknown, and the audit "
                         f"takes it from the trace, never from the machine reading it")
    gpu = gpu_from_properties(prop)
    mine = [e for e in with_geometry if int(e["args"].get("device", 0)) == dev]
    clock = _Clock(e["ts"] for e in mine)
    if mark is not None:
        marks, side = _ranges(events, mark, exact=False, clock=clock)
        named, steps_from = f"'{mark}*'", f"{mark}*"
        if not marks:
            raise AuditError(f"the trace has no range named '{mark}*' (a record_function or a GPU annotation)")
    else:
        marks, side = _ranges(events, STEP_MARK, exact=True, clock=clock)
        named, steps_from = f"'{STEP_MARK}'", STEP_MARK
        if not marks:
            marks, side = _ranges(events, PROFILER_STEP, exact=False, clock=clock)
            named, steps_from = f"torch.profiler's '{PROFILER_STEP}N'", f"{PROFILER_STEP}N"
    launch_ts = {}
    if side == "cpu":
        for e in events:
            c = e.get("args", {}).get("correlation") if isinstance(e.get("args"), dict) else None
            if e.get("cat") in RUNTIME_CATS and c is not None and "ts" in e:
                launch_ts[c] = clock(e["ts"])

    def step_of(e) -> int | None:
        ts, dur = clock(e["ts"]), float(e.get("dur", 0.0))
        if side == "gpu":
            return next((i for i, (s, t) in enumerate(marks) if s <= ts and ts + dur <= t), None)
        at = launch_ts.get(e["args"].get("correlation"))
        return None if at is None else next((i for i, (s, t) in enumerate(marks) if s <= at <= t), None)

    launches = []
    for e in mine:
        a = e["args"]
        bps = a.get("blocks per SM")
        launches.append(Launch(
            str(e.get("name", "")), _dims(a.get("grid"), "grid"), _dims(a.get("block"), "block"),
            int(a.get("registers per thread", 0)), int(a.get("shared memory", 0)), int(a.get("stream", 0)),
            clock(e["ts"]), float(e.get("dur", 0.0)), step_of(e) if marks else None,
            reported_blocks_per_sm=None if bps in (None, "inf") else float(bps),
            reported_occupancy_pct=a.get("est. achieved occupancy %")))
    notes = []
    if marks:
        n = len(marks)
        if steps is not None and steps != n:
            raise AuditError(f"the trace marks {n} steps ({named} ranges), not the {steps} asked for")
        inside = sum(1 for x in launches if x.step is not None)
        if not inside:
            raise AuditError(f"none of the trace's {len(launches)} kernels ran inside its {n} {named} ranges")
        notes.append(f"steps: {n} {named} ranges" + ("" if side == "gpu" else
                                                      " (a kernel is in the step that launched it)"))
        if inside < len(launches):
            notes.append(f"{len(launches) - inside} kernels launched outside every step are left out")
    else:
        n = 1 if steps is None else steps
        if n < 1:
            raise AuditError(f"steps must be at least 1, got {n}")
        notes.append(f"no step ranges in the trace (neither '{STEP_MARK}' nor '{PROFILER_STEP}N'): its "
                     f"{len(launches)} launches are taken as {n} step(s)")
    if len(with_geometry) < len(kernels):
        notes.append(f"{len(kernels) - len(with_geometry)} kernel events without grid or block are left out")
    if odd:
        notes.append(f"{odd} trace events that are not objects were skipped")
    if len(devices) > 1:
        notes.append(f"GPU {dev} of {devices}")
    return Trace(gpu, sorted(launches, key=lambda x: x.start_us), n, "torch.profiler", source, notes,
                 steps_from if marks else "count given")


def from_cupti(doc: dict, source: str = "") -> Trace:
    """A CUPTI record as launchlab.audit.profilers writes it: {"device": {...}, "steps": N, "records": [...]}."""
    recs, dev = doc.get("records"), doc.get("device")
    if not isinstance(recs, list) or not isinstance(dev, dict):
        raise AuditError(f"{source or 'the record'} is not a CUPTI record (records and device expected)")
    if not recs:
        raise AuditError(f"{source or 'the record'} holds no kernel launch: the program launched none on the GPU "
                         f"while CUPTI listened")
    try:
        cc = tuple(int(x) for x in str(dev["compute_capability"]).split("."))
        gpu = hardware.for_arch(str(dev["name"]), int(dev["sm_count"]), cc)
    except (KeyError, ValueError) as e:
        raise AuditError(f"the record's device is incomplete or unknown ({dev!r}): {e}") from None
    steps = int(doc.get("steps", 1))
    if steps < 1:
        raise AuditError(f"steps must be at least 1, got {steps}")
    out = []
    origin = min(int(r.get("start", 0)) for r in recs)        # ns: as µs since the epoch a float is 0.25 µs coarse
    for r in recs:
        s, d = int(r.get("static_shared_memory", 0)), int(r.get("dynamic_shared_memory", 0))
        out.append(Launch(str(r["name"]), _dims([r["grid_x"], r["grid_y"], r["grid_z"]], "grid"),
                          _dims([r["block_x"], r["block_y"], r["block_z"]], "block"),
                          int(r.get("registers_per_thread", 0)), s + d, int(r.get("stream_id", 0)),
                          (int(r["start"]) - origin) / 1e3, (r["end"] - r["start"]) / 1e3, None, s, d,
                          graph_id=int(r.get("graph_id", 0))))
    return Trace(gpu, sorted(out, key=lambda x: x.start_us), steps, "cupti-python", source,
                 steps_from="recorder's count")


def load(path, steps: int | None = None, mark: str | None = None, device: int | None = None) -> Trace:
    """Read a record from a file: a torch.profiler trace or a CUPTI record (plain or gzipped JSON). `mark`: the
    name (a prefix) of the ranges that are its steps; `device`: which GPU's kernels, in a trace of several."""
    doc = _read_json(path)
    if not isinstance(doc, dict):
        raise AuditError(f"{path} holds a JSON {type(doc).__name__}, not a profiler record")
    if "traceEvents" in doc:
        return from_torch(doc, steps, mark, source=str(path), device=device)
    if "records" in doc:
        t = from_cupti(doc, source=str(path))
        if steps is not None and steps != t.steps:
            raise AuditError(f"the record holds {t.steps} steps, not the {steps} asked for")
        return t
    raise AuditError(f"{path} is neither a torch.profiler Chrome trace (traceEvents) nor a CUPTI record (records)")
