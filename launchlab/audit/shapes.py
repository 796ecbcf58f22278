"""The audit's steps 2-3 on any program's launches: one row per launch shape (kernel, grid, block), the lab's
columns, and the ranking by idle SM-time.

Per shape, per step: calls and µs (the record's durations), their share of the step's kernel time; blocks ÷ SMs
(the SMs' share that gets a block, capped at 1); the resident blocks per SM from the course's occupancy
calculator on the recorded registers, shared memory and block, with its limiter; wave fill = blocks ÷ (SMs x
resident) capped at 1; and the idle SM-time each leaves: µs x (1 - blocks ÷ SMs), and µs x (1 - wave fill) --
the same two columns as the lab's step 3 (launchlab.sections.s09_lab.lab.show_ranking). The record's own figures
(Kineto's `blocks per SM` and `est. achieved occupancy %`) are checked against ours and every disagreement is
kept beside the row, never dropped.
"""
from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import asdict, dataclass, field

from launchlab.audit.launches import AuditError, Launch, Trace
from launchlab.core import occupancy, width


@dataclass
class Shape:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    calls: int                       # in all the steps
    calls_per_step: float
    us_per_step: float
    share: float                     # of the step's kernel time
    blocks: int
    threads: int
    registers: int
    smem: int                        # static + dynamic, per block
    sm_count: int
    resident: int                    # blocks per SM the calculator allows (0: cannot launch as recorded)
    limiter: tuple[str, ...]
    disagreements: list[str] = field(default_factory=list)
    first: int = 0                   # where its first call falls in the launch order (step 4 pairs shapes with ncu's
                                     # rows by it where two share a function and a geometry)

    @property
    def key(self) -> str:
        g = "x".join(map(str, self.grid))
        b = "x".join(map(str, self.block))
        return f"{self.kernel} grid {g} block {b}"

    @property
    def kind(self) -> str:
        """"compute", or "communication" (kind_of: NCCL, NVSHMEM, DeepEP kernels, by name)."""
        return kind_of(self.kernel)[0]

    @property
    def kind_why(self) -> str:
        """How the kind was told ('' for compute)."""
        return kind_of(self.kernel)[1]

    @property
    def sms_share(self) -> float:
        """blocks ÷ SMs, capped at 1: the SMs' share that gets a block."""
        return min(1.0, self.blocks / self.sm_count)

    @property
    def wave_fill(self) -> float | None:
        """blocks ÷ (SMs x resident blocks per SM), capped at 1 (None where the calculator allows no block)."""
        return None if self.resident == 0 else min(1.0, self.blocks / (self.sm_count * self.resident))

    @property
    def idle_sm_us(self) -> float:
        """µs per step x (1 - blocks ÷ SMs): SM-time with no block at all."""
        return self.us_per_step * (1 - self.sms_share)

    @property
    def idle_wave_us(self) -> float | None:
        """µs per step x (1 - wave fill): SM-time the resident slots leave empty."""
        return None if self.wave_fill is None else self.us_per_step * (1 - self.wave_fill)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(grid=list(self.grid), block=list(self.block), limiter=list(self.limiter), key=self.key,
                 sms_share=self.sms_share, wave_fill=self.wave_fill, idle_sm_us=self.idle_sm_us,
                 idle_wave_us=self.idle_wave_us, kind=self.kind, kind_why=self.kind_why)
        return d


OCC_TOLERANCE_PCT = 1        # Kineto rounds its estimate to a whole percent

# Kernels that move data between GPUs: few blocks by design (a channel each) and most of their time spent waiting on
# a peer, so their idle SMs are not a launch-shape finding. Told by the kernel's name: (what the name holds, lowercase;
# the library).
COMMUNICATION = (("nccl", "NCCL"), ("nvshmem", "NVSHMEM"), ("deep_ep::", "DeepEP"), ("rccl", "RCCL"))
COMMUNICATION_WHY = ("communication kernels are ranked apart: a collective launches a block per channel and spends its "
                     "time waiting on its peers, so its idle SMs are not recovered by another grid")


def kind_of(name: str) -> tuple[str, str]:
    """("communication", how it was told) for a kernel that moves data between GPUs, else ("compute", ""). The
    library's word must start a word of the name ('ncclDevKernel_...', 'void deep_ep::...'), not sit inside one."""
    low = name.lower()
    for word, lib in COMMUNICATION:
        if re.search(r"(?<![a-z0-9])" + re.escape(word), low):
            return "communication", f"{lib} (its name holds '{word}')"
    return "compute", ""


@dataclass(frozen=True)
class StepTime:
    """One step's GPU activity: the wall span from its first kernel's start to its last kernel's end, the kernel
    time summed over every stream, and how much of that sum ran beside another kernel (summed - busy)."""
    step: int | None
    wall_us: float
    kernel_us: float
    busy_us: float                   # the union of the kernels' intervals: time with at least one kernel running

    @property
    def overlap_us(self) -> float:
        return max(0.0, self.kernel_us - self.busy_us)       # >= 0; rounding of a sum never shows as "-0.0"


def step_times(trace: Trace) -> list[StepTime]:
    """Each marked step's wall span, summed kernel time and overlap (the whole record as one span when no step is
    marked: its figures are then for all its steps together)."""
    by: dict[int | None, list[Launch]] = {}
    for x in trace.in_steps:
        by.setdefault(x.step, []).append(x)
    out = []
    for step, xs in sorted(by.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        spans = sorted((x.start_us, x.start_us + x.dur_us) for x in xs)
        busy, (cur_s, cur_e) = 0.0, spans[0]
        for a, b in spans[1:]:
            if a > cur_e:
                busy += cur_e - cur_s
                cur_s, cur_e = a, b
            else:
                cur_e = max(cur_e, b)
        busy += cur_e - cur_s
        out.append(StepTime(step, max(b for _, b in spans) - spans[0][0], sum(x.dur_us for x in xs), busy))
    return out


def time_line(trace: Trace) -> str:
    """The step's time as the GPU spent it, per step: the mean over the steps, as the table's µs per step is (a
    record without marked steps: its one span divided by the steps it was said to hold)."""
    st = step_times(trace)
    per = len(st) if all(s.step is not None for s in st) else trace.steps
    wall, kern, over = (sum(getattr(s, a) for s in st) / per for a in ("wall_us", "kernel_us", "overlap_us"))
    return width.fit(f"per step: {wall:,.1f} µs of wall time from the first kernel's start to the last one's end; "
                     f"{kern:,.1f} µs of kernel time summed over the streams, {over:,.1f} µs of it beside another "
                     f"kernel", hang=2)


def _check(x: Launch, sm_count: int, resident: int, max_threads_per_sm: int) -> list[str]:
    """Where the record's own figures disagree with ours, in words."""
    out = []
    if x.reported_blocks_per_sm is not None:
        ours = x.blocks / sm_count
        if abs(ours - x.reported_blocks_per_sm) > 1e-5 * max(1.0, ours):
            out.append(f"the record's blocks per SM {x.reported_blocks_per_sm:g}, ours {ours:g}")
    if x.reported_occupancy_pct is not None:
        est = 100 * min(resident, x.blocks / sm_count) * x.threads / max_threads_per_sm
        if abs(est - x.reported_occupancy_pct) > OCC_TOLERANCE_PCT:
            out.append(f"the record's estimated occupancy {x.reported_occupancy_pct} %, ours {est:.1f} % "
                       f"({resident} resident block{'' if resident == 1 else 's'} per SM, {x.smem:,} B shared)")
    return out


def table(trace: Trace) -> list[Shape]:
    """One row per (kernel, grid, block) over the trace's steps, by µs per step, largest first."""
    launches = trace.in_steps
    if not launches:
        raise AuditError("the trace holds no launch inside its steps")
    gpu = trace.gpu
    groups: dict[tuple, list[Launch]] = {}
    order: dict[tuple, int] = {}
    for i, x in enumerate(sorted(launches, key=lambda x: x.start_us)):
        groups.setdefault((x.name, x.grid, x.block), []).append(x)
        order.setdefault((x.name, x.grid, x.block), i)
    total = sum(x.dur_us for x in launches) / trace.steps
    rows = []
    for (name, grid, block), xs in groups.items():
        first = xs[0]
        occ = occupancy.occupancy(first.threads, first.registers, first.smem, gpu)
        notes = []
        for x in xs:
            for d in _check(x, gpu.sm_count, occ.blocks_per_sm, gpu.max_threads_per_sm):
                if d not in notes:
                    notes.append(d)
        if len({(x.registers, x.smem) for x in xs}) > 1:
            notes.append("registers or shared memory differ between its calls: the first call's are used")
        us = sum(x.dur_us for x in xs) / trace.steps
        rows.append(Shape(name, grid, block, len(xs), len(xs) / trace.steps, us, us / total if total else 0.0,
                          first.blocks, first.threads, first.registers, first.smem, gpu.sm_count,
                          occ.blocks_per_sm, occ.limiter, notes, order[(name, grid, block)]))
    return sorted(rows, key=lambda r: -r.us_per_step)


def ranking(rows: list[Shape], by: str = "sms", kind: str = "compute") -> list[Shape]:
    """The rows of one kind (compute, or communication: ranked apart) by idle SM-time per step, largest first: by
    blocks ÷ SMs ("sms", the lecture's first cut) or by wave fill ("wave", its refinement: a grid past the SMs can
    still leave resident slots empty)."""
    if by not in ("sms", "wave"):
        raise ValueError(f"by must be 'sms' or 'wave', got {by!r}")
    rows = [r for r in rows if r.kind == kind]
    if by == "sms":
        return sorted(rows, key=lambda r: -r.idle_sm_us)
    return sorted(rows, key=lambda r: -(r.idle_wave_us or 0.0))


def idle_share(rows: list[Shape], below: float = 0.5) -> float:
    """The share of the step's compute kernel time spent in launches whose blocks ÷ SMs is below `below`
    (communication kernels are not counted: their idle SMs are not a launch-shape finding)."""
    rows = [r for r in rows if r.kind == "compute"]
    total = sum(r.us_per_step for r in rows)
    return sum(r.us_per_step for r in rows if r.blocks / r.sm_count < below) / total if total else 0.0


COLUMNS = ("key", "kernel", "grid", "block", "calls", "calls_per_step", "us_per_step", "share", "blocks", "threads",
           "registers", "smem", "sm_count", "sms_share", "resident", "limiter", "wave_fill", "idle_sm_us",
           "idle_wave_us", "kind", "disagreements")


def to_csv(rows: list[Shape]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        d = r.to_dict()
        w.writerow(["x".join(map(str, d[c])) if c in ("grid", "block") else
                    " and ".join(d[c]) if c == "limiter" else "; ".join(d[c]) if c == "disagreements" else
                    ("" if d[c] is None else d[c]) for c in COLUMNS])
    return buf.getvalue()


def to_json(trace: Trace, rows: list[Shape]) -> str:
    return json.dumps({"gpu": trace.gpu.name, "sm_count": trace.gpu.sm_count, "steps": trace.steps,
                       "steps_from": trace.steps_from, "tool": trace.tool, "source": trace.source, "notes": trace.notes,
                       "launches_per_step": sum(r.calls for r in rows) / trace.steps,
                       "us_per_step": sum(r.us_per_step for r in rows),
                       "idle_share_below_half": idle_share(rows),
                       "communication_us_per_step": sum(r.us_per_step for r in rows if r.kind == "communication"),
                       "step_times": [{"step": t.step, "wall_us": t.wall_us, "kernel_us": t.kernel_us,
                                       "overlap_us": t.overlap_us} for t in step_times(trace)],
                       "rows": [{c: r.to_dict()[c] for c in COLUMNS} for r in rows]}, indent=1)


GENERIC = {"at", "native", "c10", "std", "void", "const", "unsigned", "int", "long", "float", "double", "bool",
           "char", "short", "half", "BFloat16", "Half", "detail", "cuda", "anonymous", "namespace", "lambda",
           "operator", "TensorIteratorBase", "OpaqueType", "func_wrapper_t", "ReduceOp", "gpu_kernel_impl",
           "gpu_kernel_impl_nocast", "Array", "char_ptr", "TrivialOffsetCalculator", "LoadWithoutCast",
           "StoreWithoutCast", "nv_bfloat16", "__nv_bfloat16", "cutlass", "cute", "kernel", "true", "false"}


NAMESPACES = {"at", "native", "c10", "std", "detail", "cuda", "cutlass", "cute", "anonymous", "namespace",
              "binary_internal", "impl"}              # never the word that tells two kernels apart


def _mangled_ids(m: str, i: int) -> list[str]:
    """The <length><identifier> source names of an Itanium-mangled name from position i, in order."""
    out = []
    while i < len(m):
        if m[i].isdigit():
            j = i
            while j < len(m) and m[j].isdigit():
                j += 1
            n = int(m[i:j])
            if n and j + n <= len(m) and (m[j].isalpha() or m[j] == "_"):
                out.append(m[j:j + n])
                i = j + n
                continue
            i = j
        else:
            i += 1
    return out


def demangle_head(name: str) -> str:
    """An Itanium-mangled kernel name (CUPTI's, `_Z...`) as its qualified function name, without template arguments
    or parameters (`_ZN8internal5gemvx6kernelIii...` -> `internal::gemvx::kernel`); any other name as it is."""
    if not name.startswith("_Z"):
        return name
    i, parts = 2, []
    nested = name[i:i + 1] == "N"
    i += nested
    while i < len(name):
        while nested and i < len(name) and name[i] in "rVK":
            i += 1
        j = i
        while j < len(name) and name[j].isdigit():
            j += 1
        if j == i:
            break
        n = int(name[i:j])
        parts.append(name[j:j + n])
        i = j + n
        if not nested or (i < len(name) and name[i] in "IE"):
            break
    return "::".join(parts) if parts else name


def _split(name: str) -> tuple[str, str]:
    """(the function's qualified name, its template arguments' text) of a kernel name as a profiler writes it."""
    if name.startswith("_Z"):
        head = demangle_head(name)
        return head, " ".join(_mangled_ids(name, 2)[head.count("::") + 1:])
    n = name.replace("(anonymous namespace)", "{anonymous}")
    n = n[5:] if n.startswith("void ") else n
    depth, base, args = 0, [], []
    for ch in n:
        if ch in "<(":
            if depth == 0 and ch == "(":
                break
            depth += 1
            if depth == 1:
                continue
        elif ch in ">)":
            depth -= 1
            if depth == 0:
                continue
        (base if depth == 0 else args).append(ch)
    return ("".join(base).strip() or name), "".join(args)


def _cut(s: str, width: int) -> str:
    """Cut from the left: the function's own name, at the end, is what tells kernels apart."""
    return s if len(s) <= width else "…" + s[-(width - 1):]


def short(name: str, width: int = 48) -> str:
    """A kernel's name without its template arguments and parameter list (demangled where mangled), cut from the
    left to `width`."""
    return _cut(_split(name)[0], width)


def short_names(names, width: int = 48) -> dict[str, str]:
    """Every name's short form, never one for two kernels: where names share a short form, each gets the first
    word of its template arguments that the others lack (`elementwise_kernel<masked_fill_kernel>`), and a
    number where even that is shared."""
    names = list(dict.fromkeys(names))
    split = {n: _split(n) for n in names}
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(_cut(split[n][0], width), []).append(n)
    out = {}
    for s, members in groups.items():
        if len(members) == 1:
            out[members[0]] = s
            continue
        words = {n: re.findall(r"[A-Za-z_][A-Za-z0-9_]*", split[n][1]) for n in members}
        for n in members:                             # a word of its own: a telling one first, else any
            others = set().union(*(set(words[m]) for m in members if m != n))
            own = [w for w in words[n] if w not in others and w not in NAMESPACES]
            tell = next((w for w in own if w not in GENERIC), own[0] if own else None)
            out[n] = _cut(f"{split[n][0]}<{tell}>", width) if tell else _cut(split[n][0], width)
        counts: dict[str, int] = {}
        for n in members:
            counts[out[n]] = counts.get(out[n], 0) + 1
        seen: dict[str, int] = {}
        for n in members:                             # what is still shared gets a number, in the order given
            label = out[n]
            if counts[label] > 1:
                seen[label] = seen.get(label, 0) + 1
                tag = f" #{seen[label]}"
                out[n] = _cut(label, width - len(tag)) + tag
    return out


def lines(rows: list[Shape], steps: int, top: int = 12, by: str = "sms") -> list[str]:
    """The ranking's table: the top rows by idle SM-time (with any disagreement under its row), then the totals."""
    ranked = ranking(rows, by)[:top]
    comm = ranking(rows, by, kind="communication")[:top]
    out = [f"{'kernel':<40} {'grid':>11} {'block':>9} {'calls':>5} {'µs/step':>8} {'share':>6} {'blk/SM':>6} "
           f"{'res':>3} {'fill':>5} {'idle µs':>8}"]
    label = short_names([r.kernel for r in ranked + comm], 40)
    for r in ranked + comm:
        if comm and r is comm[0]:
            out += width.fit(f"communication, {sum(c.us_per_step for c in rows if c.kind == 'communication'):,.1f} "
                             f"µs per step -- {COMMUNICATION_WHY}:", hang=2).split("\n")
        g, b = "x".join(map(str, r.grid)), "x".join(map(str, r.block))
        fill = "" if r.wave_fill is None else f"{r.wave_fill:.2f}"
        idle = r.idle_sm_us if by == "sms" else (r.idle_wave_us or 0.0)
        calls = f"{r.calls_per_step:.0f}" if r.calls_per_step == int(r.calls_per_step) else f"{r.calls_per_step:.1f}"
        out.append(f"{label[r.kernel]:<40} {g:>11} {b:>9} {calls:>5} {r.us_per_step:>8.1f} "
                   f"{r.share:>6.1%} {r.blocks / r.sm_count:>6.2f} {r.resident:>3} {fill:>5} {idle:>8.1f}")
        for d in r.disagreements:
            out.append(f"    ! {d}")
    n = sum(r.calls for r in rows) / steps
    out += width.fit(f"{len(rows)} launch shapes, {n:.0f} launches and {sum(r.us_per_step for r in rows):,.1f} µs of "
                     f"kernel time per step; {idle_share(rows):.0%} of it in launches that leave more than half the "
                     f"SMs without a block", hang=2).split("\n")
    return out


def text(trace: Trace, rows: list[Shape], top: int = 12, by: str = "sms") -> str:
    """The ranking as the lab prints it: the top rows by idle SM-time, then the totals."""
    head = (f"{trace.gpu.name}, {trace.gpu.sm_count} SMs; {trace.steps} step(s) from {trace.tool}; ranked by idle "
            f"SM-time ({'blocks ÷ SMs' if by == 'sms' else 'wave fill'})")
    return "\n".join([width.fit(head, hang=2)] + lines(rows, trace.steps, top, by) + [time_line(trace)]
                     + [width.fit(f"note: {x}") for x in trace.notes])
