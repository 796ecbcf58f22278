"""The decode step's profile: what every launch of one step costs, with its geometry and occupancy.

    profile   every launch of one step, timed inside a CUDA graph (a timing event between launches, >= 10
              replays): grouped by what it is (role, kernel, grid, block), with registers, shared memory,
              theoretical occupancy and its limiter (the course's calculator), calls per token, µs per call
              (median and robust spread) and its share of the step. A timing event in a graph costs a
              couple of µs itself (the next launch waits for it): measured apart on a tiny kernel and
              subtracted from every interval. The sum is checked against the same step graph-timed without
              the events (within 10 %). Events around each launch of an eager step are
              kept beside it: there the host's launch gaps land inside the intervals, and the sum overstates.

(eval and bench, the step's two whole-step instruments, are in launchlab.sections.s06_one_binary.onebinary.)
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from launchlab.core import hardware, loader, occupancy, slices, timing
from launchlab.kernels import decode


@dataclass
class Row:
    role: str                 # the site without its layer: "kda.prep", "mla.split", "post_norm", ...
    kernel: str               # family:expression, or cublas:...
    grid: list[int]
    block: int
    sms_with_work: int | None # min(blocks in the grid, SMs): how many SMs the launch can keep busy at all
    registers: int | None     # None for cuBLAS's kernels
    smem: int | None          # static + dynamic bytes per block
    occupancy_pct: float | None
    limiter: str
    calls: int                # per token
    us_per_call: float        # median over calls and replays, in-step (weights cold, activations as the step
                              # leaves them in L2), the timing event's own cost subtracted
    spread_pct: float         # robust: median absolute deviation over the median, in %
    us_per_token: float       # calls x median
    reps_us: list = field(default_factory=list)   # per replay (step): the mean µs per call of this row's launches

    def share(self, step_us: float) -> float:
        return self.us_per_token / step_us


def _resources(kernel: str, block: int, dyn_smem: int, live: bool = True):
    fam, expr = kernel.split(":", 1)
    if fam == "cublas":
        return None, None, None, "cuBLAS"
    if live:
        k = loader.kernel(fam, expr)
        regs, static = k.registers, k.smem_static
    else:
        r, _ = loader.compiled_resources(fam, expr)
        regs, static = r.registers, r.smem_static
    o = occupancy.occupancy(block, regs, static + dyn_smem)
    return regs, static + dyn_smem, 100 * o.fraction, " and ".join(o.limiter)


def rows(launches: list["decode.Launch"], samples: list[list[float]], live: bool = True) -> list[Row]:
    """Group one step's launches (in order) with per-step µs samples (one list per step, same order)."""
    if any(len(s) != len(launches) for s in samples):
        raise ValueError("every sample must time every launch of the step, in order")
    groups: dict[tuple, list[int]] = {}
    for i, ln in enumerate(launches):
        groups.setdefault((ln.role, ln.kernel, tuple(ln.grid), ln.block, ln.smem), []).append(i)
    out = []
    for (role, kernel, grid, block, smem), idx in groups.items():
        xs = [s[i] for s in samples for i in idx]
        med = statistics.median(xs)
        mad = statistics.median(abs(x - med) for x in xs)
        regs, sm, occ, lim = _resources(kernel, block, smem, live)
        blocks = 1
        for g in grid:
            blocks *= g
        sms = min(blocks, hardware.spec("H200").sm_count) if grid else None
        reps = [statistics.fmean(s[i] for i in idx) for s in samples]
        out.append(Row(role, kernel, list(grid), block, sms, regs, sm, occ, lim, len(idx), med,
                       100 * mad / med if med else 0.0, len(idx) * med, reps))
    return sorted(out, key=lambda r: -r.us_per_token)


@dataclass
class Profile:
    """One step's profile: rows from a CUDA graph with a timing event between launches, replayed `reps` times."""
    ctx: int                   # the position decoded: the context its attention reads
    preset: str                # the gate setting it ran under ("main", "fixed", or a description)
    rows: list[Row]
    reps: int
    event_cost_us: float       # what one timing event adds inside a graph (event_cost_us), subtracted per launch
    marked_us: list[float]     # per replay: last mark - first mark, events and all
    graph_us: list[float]      # the same step in a graph without marks, per replay
    eager_us: list[float]      # the eager step with an event pair around each launch: sum per step

    @property
    def step_us(self) -> float:
        return statistics.median(self.graph_us)

    @property
    def sum_us(self) -> float:
        """The sum of the per-launch times (calls x median per call)."""
        return sum(r.us_per_token for r in self.rows)

    @property
    def agreement(self) -> float:
        """sum of the per-launch times / the graph-timed step - 1 (the issue asks within 10 %)."""
        return self.sum_us / self.step_us - 1

    @property
    def launches(self) -> int:
        return sum(r.calls for r in self.rows)

    def norms(self) -> int:
        return sum(r.calls for r in self.rows if r.kernel.startswith("rms_norm:"))

    def share(self, pred) -> float:
        """The share of the step taken by the rows `pred(row)` selects."""
        return sum(r.us_per_token for r in self.rows if pred(r)) / self.sum_us

    def to_dict(self) -> dict:
        rows = [{k: v for k, v in asdict(r).items() if k != "reps_us" or v} for r in self.rows]   # as recorded
        return {"ctx": self.ctx, "preset": self.preset, "rows": rows, "reps": self.reps,
                "event_cost_us": self.event_cost_us, "marked_us": self.marked_us, "graph_us": self.graph_us,
                "eager_us": self.eager_us}

    @classmethod
    def from_dict(cls, d: dict) -> "Profile":
        return cls(d["ctx"], d["preset"], [Row(**r) for r in d["rows"]], d["reps"], d["event_cost_us"],
                   d["marked_us"], d["graph_us"], d["eager_us"])


def event_cost_us(launches: int = 400, reps: int = 10) -> float:
    """What a timing event between two launches adds inside a CUDA graph: `launches` one-block launches of a
    tiny kernel captured with a mark before each and without, both replayed `reps` times; the difference of
    the medians over `launches`. (A mark is stamped when the work before it is done, and the next launch
    waits for the mark: the graph can no longer start a launch while the previous one drains.)"""
    import cupy as cp
    import numpy as np
    k = loader.kernel("decode_ops", "to_bf16")
    x, y = cp.zeros(256, dtype=cp.float32), cp.zeros(256, dtype=cp.uint16)
    one = lambda: k.launch((1,), 256, (x, y, np.int32(256)))
    one()
    cp.cuda.Device().synchronize()
    stream = slices.stream()
    plain = timing.capture(one, launches, stream)
    evs = []

    def marked():
        evs.append(timing.mark())
        one()
    with_marks = timing.capture(marked, launches, stream)
    a = statistics.median(timing._replay(plain, stream, launches, reps, 2))
    b = statistics.median(timing._replay(with_marks, stream, launches, reps, 2))
    return b - a


def profile(model: "decode.Model", pos: int, reps: int = 10, preset: str = "", eager_steps: int = 3,
            event_cost: float | None = None) -> Profile:
    """The profile of the step at `pos` (every replay re-decodes position pos), under the gates set now.

    Per launch: a graph of one step with a timing event before every launch and one after the last, replayed
    `reps` times; launch i's time is mark i+1 - mark i - the event's own cost (event_cost_us(), measured
    apart on a tiny kernel): its run and its share of the graph's launch overhead. The same step captured
    without marks gives the step time the sum is checked against; the eager step with an event pair around
    each launch is kept beside them (its intervals hold the host's launch gaps: it overstates)."""
    import cupy as cp
    c = event_cost_us() if event_cost is None else event_cost
    log = model.launches(pos)                          # a step: the warm-up, every kernel loaded, every buffer sized
    cp.cuda.Device().synchronize()
    step_us = [ms * 1e3 for ms in graph_ms_per_token(model, [pos], reps, warmed=True)]
    eager = [sum(us for _, us in model.timed_step(pos)) for _ in range(eager_steps)]
    stream = slices.stream()
    model.timer, model.marks = [], True
    try:
        def marked_step():
            model.step(pos)
            model.mark("end")
        g = timing.capture(marked_step, 1, stream)
        marks = [ev for _, ev in model.timer]
    finally:
        model.timer, model.marks = None, False
    if len(marks) != len(log) + 1:
        raise RuntimeError(f"{len(marks)} marks for {len(log)} launches")
    g.launch(stream)
    stream.synchronize()
    samples, marked = [], []
    for _ in range(reps):
        g.launch(stream)
        stream.synchronize()
        samples.append([cp.cuda.get_elapsed_time(a, b) * 1e3 - c for a, b in zip(marks, marks[1:])])
        marked.append(cp.cuda.get_elapsed_time(marks[0], marks[-1]) * 1e3)
    return Profile(pos, preset, rows(log, samples), reps, c, marked, step_us, eager)


def graph_ms_per_token(model: "decode.Model", positions: list[int], reps: int = 5,
                       warmed: bool = False) -> list[float]:
    """Steps at `positions` in one CUDA graph, replayed `reps` times: ms per token, per replay. `warmed`: the
    caller has just stepped every position eagerly under the same settings, so the warm-up is skipped."""
    import cupy as cp
    if not warmed:
        for p in positions:                  # warm-up outside the capture
            model.step(p)
    cp.cuda.Device().synchronize()
    g, stream = model.graph(positions)
    return [t / 1e3 for t in timing._replay(g, stream, len(positions), reps, 2)]


def table(p: Profile, top: int | None = 12) -> str:
    """The profile as text, in two tables no wider than 110 columns: where each role's launch lands (kernel,
    geometry, resources, occupancy and its limiter), then what it costs (calls, µs per call and its spread, ms per
    token, share), the rows by time per token (the `top` first); then the totals and the checks."""
    import textwrap
    rows = p.rows[:top]
    out = [f"{'role':<15} {'kernel':<26} {'grid':>9} {'block':>5} {'SMs':>4} {'regs':>4} {'smem B':>7} "
           f"{'occ %':>5}  limiter"]
    for r in rows:
        grid = "x".join(str(g) for g in r.grid) if r.grid else "cuBLAS"
        out.append(f"{r.role:<15} {r.kernel.split(':', 1)[1][:26]:<26} {grid:>9} {r.block or '':>5} "
                   f"{r.sms_with_work if r.sms_with_work is not None else '':>4} "
                   f"{r.registers if r.registers is not None else '':>4} {r.smem if r.smem is not None else '':>7} "
                   f"{'' if r.occupancy_pct is None else f'{r.occupancy_pct:.0f}':>5}  {r.limiter[:26]}")
    out.append("")
    out.append(f"{'role':<15} {'calls':>5} {'µs/call':>8} {'spread':>7} {'ms/token':>9} {'share':>6}")
    for r in rows:
        out.append(f"{r.role:<15} {r.calls:>5} {r.us_per_call:>8.2f} {r.spread_pct:>6.1f}% "
                   f"{r.us_per_token / 1e3:>9.3f} {r.share(p.sum_us):>6.1%}")
    if top is not None and len(p.rows) > top:
        rest = p.rows[top:]
        out.append(f"... {len(rest)} more rows, {sum(r.calls for r in rest)} launches, "
                   f"{sum(r.us_per_token for r in rest) / 1e3:.3f} ms/token")
    out += textwrap.wrap(f"{p.launches:,} launches per token ({p.norms()} RMS norms); sum of the rows "
                         f"{p.sum_us / 1e3:.3f} ms vs the step graph-timed without marks {p.step_us / 1e3:.3f} ms: "
                         f"{p.agreement:+.1%} (timing event {p.event_cost_us:.2f} µs subtracted per launch; "
                         f"{p.reps} replays)", 108)
    return "\n".join(out)
