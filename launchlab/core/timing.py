"""Timing instruments. Every result keeps all of its reps; none reports a bare mean.

events(fn)      CUDA events recorded around each call on one stream, after warm-up calls. Measures the GPU
                time between the two events. Before each rep a short GPU spin (kernels/spin.cu) is queued so
                that the start event executes behind GPU work: the host's launch overhead for fn then
                falls outside the window, and the reading is the kernel's own time. With preroll_us=0 the
                window also holds whatever launch gap the host leaves, which for a microsecond kernel is
                most of the reading (the naive instrument; the device recording shows both).
graph(fn, n)    n calls captured once into a CUDA graph; each rep replays the graph between two events and
                reports elapsed / n. The launches are pre-built, so the per-launch gap shrinks to the
                graph's own per-launch cost (notebook 00 measures it: instruments.launch_costs()): the
                instrument for microsecond kernels, and the one the lecture's "327 norms per token" calls for.
graph_cold(fns) the same, but launch i runs fns[i % len(fns)], each on its own copy of the buffers, and the
                copies together are several times the L2 (copies_for): every launch finds its data in HBM,
                as a decode step does when the rest of the model has run since this layer's last call.
                The instrument to compare with a bytes / bandwidth floor. Every other instrument here
                replays the same buffers and so runs with a hot L2 -- Timing.l2 says which.
abba(a, b)      two arms of one build measured interleaved A B | B A | A B ... so drift (clocks, thermals,
                other tenants) lands on both arms alike; every rep is kept in order.

The two instruments disagree on small kernels by design: an A/B delta is only meaningful inside one
instrument (lecture §6.2).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from launchlab.core import loader, mode, sharing, slices


@dataclass
class Timing:
    """All reps of one measurement, in microseconds, with the summary the course always reports."""
    reps_us: list[float]
    method: str = "events"        # "events", "graph", or "host"
    launches_per_rep: int = 1     # graph: launches replayed per rep (reps are already divided by this)
    label: str = ""
    shared: str | None = None     # live: what NVML said about the GPU when measured (sharing.note); None alone

    def __post_init__(self):
        if not self.reps_us:
            raise ValueError("a Timing needs at least one rep")
        self.reps_us = [float(x) for x in self.reps_us]
        self.shared = self.shared or None             # '' (alone) is not recorded: recordings keep their keys

    @property
    def n(self) -> int:
        return len(self.reps_us)

    @property
    def median(self) -> float:
        return statistics.median(self.reps_us)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.reps_us)

    @property
    def stddev(self) -> float:
        """Sample standard deviation (n-1); 0 for a single rep."""
        return statistics.stdev(self.reps_us) if self.n > 1 else 0.0

    @property
    def min(self) -> float:
        return min(self.reps_us)

    @property
    def max(self) -> float:
        return max(self.reps_us)

    @property
    def cv(self) -> float:
        """Coefficient of variation: stddev / mean."""
        return self.stddev / self.mean if self.mean else math.nan

    @property
    def l2(self) -> str:
        """'cold' when every launch found its data outside the L2 (graph_cold), 'hot' when the reps replayed
        the same buffers (everything else): say it beside every time."""
        return "cold" if self.method.endswith("-cold") else "hot"

    def summary(self) -> str:
        return (f"median {self.median:.3f} µs, stddev {self.stddev:.3f} µs ({self.cv:.1%}), "
                f"min {self.min:.3f}, max {self.max:.3f}, n={self.n} ({self.method}, {self.l2} L2)"
                + (f" [{self.shared}]" if self.shared else ""))

    def to_dict(self) -> dict:
        return {"reps_us": self.reps_us, "method": self.method, "launches_per_rep": self.launches_per_rep,
                "label": self.label} | ({"shared": self.shared} if self.shared else {})

    @classmethod
    def from_dict(cls, d: dict) -> "Timing":
        return cls(list(d["reps_us"]), d.get("method", "events"), int(d.get("launches_per_rep", 1)),
                   d.get("label", ""), d.get("shared"))


def _cupy():  # pragma: no mutate block (live only)
    mode.require_live("timing on the GPU")
    import cupy
    return cupy


_spin_state: dict = {}


def spin(us: float, stream=None) -> None:  # pragma: no mutate block (live only)
    """Queue a GPU-side wait of `us` microseconds on `stream` (the current one by default)."""
    cp = _cupy()
    if "buf" not in _spin_state:
        _spin_state["buf"] = cp.zeros(1, dtype=cp.int64)
    loader.kernel("spin", "spin_wait").launch(1, 32, (np.int64(int(us * 1000)), _spin_state["buf"]),
                                               stream=stream)


def events(fn: Callable[[], object], reps: int = 10, warmup: int = 3, stream=None, label: str = "",
           preroll_us: float = 200.0, l2: str = "hot") -> Timing:  # pragma: no mutate block (live only)
    """Time `fn()` (which enqueues GPU work on the current stream) with a pair of CUDA events per rep,
    each rep queued behind a `preroll_us` GPU spin so host launch overhead stays out of the window.
    l2="cold" records that fn itself rotates over buffers larger than the L2 (the caller's promise)."""
    if l2 not in ("hot", "cold"):
        raise ValueError(f"l2 must be 'hot' or 'cold', got {l2!r}")
    cp = _cupy()
    if reps < 1:
        raise ValueError("reps must be at least 1")
    stream = stream or cp.cuda.get_current_stream()
    with stream:
        for _ in range(warmup):
            fn()
        stream.synchronize()
        out = []
        for _ in range(reps):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            if preroll_us > 0:
                spin(preroll_us, stream)
            start.record(stream)
            fn()
            end.record(stream)
            end.synchronize()
            out.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
    method = "events" if preroll_us > 0 else "events-naive"
    return Timing(out, method + ("-cold" if l2 == "cold" else ""), 1, label, sharing.note())


def capture(fn: Callable[[], object], launches: int, stream):  # pragma: no mutate block (live only)
    """Capture `launches` calls of fn into a CUDA graph on `stream` (a non-default stream)."""
    with stream:
        stream.begin_capture()
        try:
            for _ in range(launches):
                fn()
        finally:
            g = stream.end_capture()
    return g


def mark(stream=None):  # pragma: no mutate block (live only)
    """A timing event recorded on `stream` (default: the current one) now. While the stream is being captured
    it becomes a node of the graph (cudaEventRecordExternal), stamped at each replay when the work before it
    is done: marks between launches time each launch inside a graph. A mark is not free -- see
    stepprofile.event_cost_us()."""
    cp = _cupy()
    stream = stream or cp.cuda.get_current_stream()
    ev = cp.cuda.Event()
    if stream.is_capturing():
        from cuda.bindings import runtime as rt
        err, = rt.cudaEventRecordWithFlags(ev.ptr, stream.ptr, rt.cudaEventRecordExternal)
        if err != rt.cudaError_t.cudaSuccess:
            raise RuntimeError(f"cudaEventRecordWithFlags during capture: {err}")
    else:
        ev.record(stream)
    return ev


def _replay(g, stream, launches: int, reps: int, warmup: int) -> list[float]:  # pragma: no mutate block (live only)
    """Replay a captured graph `warmup` times, then `reps` times between two events: us per launch."""
    cp = _cupy()
    for _ in range(warmup):
        g.launch(stream)
    stream.synchronize()
    out = []
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        g.launch(stream)
        end.record(stream)
        end.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, end) * 1e3 / launches)
    return out


def graph(fn: Callable[[], object], launches: int = 327, reps: int = 10, warmup: int = 2,
          label: str = "") -> Timing:  # pragma: no mutate block (live only)
    """Per-launch time of `fn` from replays of a CUDA graph holding `launches` calls of it."""
    cp = _cupy()
    if launches < 1 or reps < 1:
        raise ValueError("launches and reps must be at least 1")
    stream = slices.stream()        # inside a slice of N SMs, a stream of its green context
    fn()                        # compile/load outside the capture
    cp.cuda.Device().synchronize()
    g = capture(fn, launches, stream)
    return Timing(_replay(g, stream, launches, reps, warmup), "graph", launches, label, sharing.note())


def torch_graph(calls, launches: int, reps: int) -> list[float]:  # pragma: no mutate block (live only)
    """Per-call us of `launches` calls (cycling through `calls`) captured in one PyTorch CUDA graph: how the
    course times a PyTorch peer without its host dispatch (torch is imported only here)."""
    import torch
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for c in calls[:3]:
            c()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(launches):
            calls[i % len(calls)]()
    for _ in range(2):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / launches)
    return times


L2_MARGIN = 3     # the rotated copies add up to at least this many L2s


def copies_for(footprint_bytes: int, l2_bytes: int, margin: int = L2_MARGIN) -> int:
    """How many copies of a launch's buffers (footprint_bytes each) a cold-L2 rotation needs: enough that
    the bytes touched between two launches on one copy are `margin` times the L2, so the copy's lines have
    been evicted before it comes round again (Triton's do_bench instead writes a 256 MB buffer between reps,
    nvbench a buffer of the L2's size; a rotation keeps the graph free of flush kernels)."""
    if footprint_bytes <= 0 or l2_bytes <= 0:
        raise ValueError("footprint and L2 size must be positive")
    return max(2, -(-margin * l2_bytes // footprint_bytes))


@dataclass
class Captured:
    """A graph captured for cold replays (graph_cold_capture), replayed by replay_cold: apart, so that other
    work can be started between the two (the capture synchronizes the device, which would wait for it)."""
    graph: object
    stream: object
    launches: int
    label: str = ""


def graph_cold_capture(fns: Sequence[Callable[[], object]], launches: int | None = None,
                       label: str = "") -> Captured:  # pragma: no mutate block (live only)
    """A CUDA graph of launches that cycle through `fns` (each launches the kernel on its own copy of the
    buffers; build them with copies_for), captured and not yet replayed. `launches` is rounded up to a whole
    number of cycles so every copy runs equally often."""
    cp = _cupy()
    if not fns:
        raise ValueError("graph_cold needs at least one buffer copy")
    n = len(fns)
    launches = n * max(1, -(-(launches or n) // n))
    stream = slices.stream()        # inside a slice of N SMs, a stream of its green context
    for f in fns:               # compile/load outside the capture; touches every copy once
        f()
    cp.cuda.Device().synchronize()
    it = iter(range(launches))
    return Captured(capture(lambda: fns[next(it) % n](), launches, stream), stream, launches, label)


def replay_cold(c: Captured, reps: int = 10, warmup: int = 2) -> Timing:  # pragma: no mutate block (live only)
    """Per-launch time with a cold L2 from `reps` replays of a captured graph (graph_cold_capture)."""
    if reps < 1:
        raise ValueError("reps must be at least 1")
    return Timing(_replay(c.graph, c.stream, c.launches, reps, warmup), "graph-cold", c.launches, c.label,
                  sharing.note())


def graph_cold(fns: Sequence[Callable[[], object]], launches: int | None = None, reps: int = 10,
               warmup: int = 2, label: str = "") -> Timing:  # pragma: no mutate block (live only)
    """Per-launch time with a cold L2: a CUDA graph of launches that cycle through `fns`, captured and replayed
    (graph_cold_capture, then replay_cold)."""
    if reps < 1:
        raise ValueError("reps must be at least 1")
    return replay_cold(graph_cold_capture(fns, launches, label), reps, warmup)


@dataclass
class ABBA:
    """Interleaved A/B measurement. `order` is the arm of each rep, in the order they ran."""
    order: list[str]
    results: list[Timing]
    labels: tuple[str, str] = ("A", "B")
    extra: dict = field(default_factory=dict)

    def arm(self, which: str) -> list[Timing]:
        return [r for o, r in zip(self.order, self.results) if o == which]

    def medians(self, which: str) -> list[float]:
        return [t.median for t in self.arm(which)]

    def ratio(self) -> float:
        """median over reps of arm B / median over reps of arm A (>1: A is faster)."""
        a, b = statistics.median(self.medians("A")), statistics.median(self.medians("B"))
        return b / a

    def table(self) -> str:
        rows = [f"{'rep':>3}  {'arm':<24} {'median µs':>10} {'stddev':>8}"]
        for i, (o, t) in enumerate(zip(self.order, self.results)):
            name = self.labels[0] if o == "A" else self.labels[1]
            rows.append(f"{i:>3}  {o} {name:<22} {t.median:>10.3f} {t.stddev:>8.3f}")
        a, b = statistics.median(self.medians("A")), statistics.median(self.medians("B"))
        rows.append(f"A {self.labels[0]}: {a:.3f} µs   B {self.labels[1]}: {b:.3f} µs   B/A = {b / a:.3f}")
        shared = sorted({r.shared for r in self.results if r.shared})
        rows += [f"measured on a shared GPU: {s}" for s in shared]
        return "\n".join(rows)

    def to_dict(self) -> dict:
        return {"order": self.order, "results": [r.to_dict() for r in self.results],
                "labels": list(self.labels), "extra": self.extra}

    @classmethod
    def from_dict(cls, d: dict) -> "ABBA":
        return cls(list(d["order"]), [Timing.from_dict(r) for r in d["results"]], tuple(d["labels"]),
                   d.get("extra", {}))


def abba_order(pairs: int) -> list[str]:
    """A B | B A | A B | ... : `pairs` pairs, alternating which arm goes first."""
    if pairs < 1:
        raise ValueError("pairs must be at least 1")
    out: list[str] = []
    for i in range(pairs):
        out += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    return out


def abba(measure_a: Callable[[], Timing], measure_b: Callable[[], Timing], pairs: int = 3,
         labels: tuple[str, str] = ("A", "B")) -> ABBA:
    """Run two arms interleaved ABBA; each measure_* call is one rep (itself a Timing, e.g. a graph replay
    series). Both arms must be the same build with a runtime gate flipped (see launchlab.core.gates)."""
    order = abba_order(pairs)
    results = [(measure_a if o == "A" else measure_b)() for o in order]
    return ABBA(order, results, labels)
