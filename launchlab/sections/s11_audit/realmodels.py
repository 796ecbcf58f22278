"""§11 audit a real model: the lab's audit run on transformers decode steps the course did not write, recorded on
the H200 like every other door.

For each model of launchlab.sections.s11_audit.models (batch-1 decode, random weights from configs):
- steps 1-3: `audit.profilers.run` under torch.profiler (8 steps after a warm-up) -> the shape table and its
  ranking by idle SM-time (launchlab.audit.shapes);
- step 4 for the top offenders: ncu on those kernels only, in a child that runs the same model
  (launchlab.audit.floors): DRAM bytes per call, cold time of every call, floor against the copy ceiling
  measured in the same run, and the course's verdict.
Then one change a user can make from outside the library, for the Llama-style model's attention finding (cuDNN's
SDPA kernel at 8 blocks): SDPA limited to another backend, measured single-process ABBA (per rep: the wall time
of 8 decode steps, hot: back to back, nothing flushed) at the audit's context and at a long one, with each arm's
kernels audited; and the CUPTI path on the course's own CuPy decode step, checked against its launch log and its
step profile.

Live, the door answers with the recording (replayed_live: minutes of ncu and three model builds); a learner
re-measures with data(refresh=True) or LAUNCHLAB_REMEASURE=section11, with the `[audit]` extra installed.
"""
from __future__ import annotations

import gzip
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field

from launchlab.audit import crosscheck, floors, launches, profilers, shapes, sites
from launchlab.audit.floors import Floor
from launchlab.audit.shapes import Shape
from launchlab.core import gates, mode, paths, recordings, width
from launchlab.core.door import Door
from launchlab.core.recordings import RECORDED
from launchlab.kernels import decode
from launchlab.sections.s09_lab import lab
from launchlab.sections.s11_audit import models

STEPS = 8                       # profiled decode steps per model
TOP = 5                         # offenders that step 4 measures, per model
FIX_MODEL = "llama"
FIX_CANDIDATES = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION")   # tried in this order; the first that runs is measured
FIX_CONTEXTS = (models.PREFILL, 3584)
HOST_PREFILL = 1536                # the host check's own lengths: 1,536-1,568 and 2,048-2,080, run nowhere else
COURSE_STEPS, COURSE_CTX = 3, 131_072
NCU_DIR = paths.ROOT / "data" / "audit"       # <model>.ncu.csv.gz: ncu's CSV of step 4, written by the recorder


@dataclass
class ModelAudit:
    name: str
    label: str
    model: str                      # transformers' class
    config: dict                    # the arguments its config was built from
    parameters: int
    prefill: int
    steps: int
    gpu: str
    sm_count: int
    launches_per_step: float
    us_per_step: float              # kernel time per step (the record's durations)
    idle_share: float               # of it, in launches with blocks / SMs < 0.5
    rows: list[Shape]
    floors: list[Floor]
    ncu_steps: int
    ncu_seconds: float
    build_s: float

    @property
    def ranked(self) -> list[Shape]:
        return shapes.ranking(self.rows)


@dataclass
class Arm:
    label: str
    backend: str                    # "default" or an SDPBackend name
    rows: list[Shape]               # its step's launch shapes (torch.profiler, STEPS steps)
    attention: list[str]            # the keys of its attention kernels' shapes

    @property
    def us_per_step(self) -> float:
        return sum(r.us_per_step for r in self.rows)

    @property
    def idle_sm_us(self) -> float:
        return sum(r.idle_sm_us for r in self.rows)

    @property
    def attention_rows(self) -> list[Shape]:
        return [r for r in self.rows if r.key in self.attention]


@dataclass
class FixAt:
    ctx: int                        # the context at the first timed rep
    order: str                      # "ABBA..." as run
    a_us: list[float]               # µs per decode step, per rep, in run order (hot: back to back)
    b_us: list[float]
    steps_per_rep: int
    a: Arm
    b: Arm

    @property
    def gain(self) -> float:
        """(median A - median B) / median A: the step's wall time the change saves."""
        ma = statistics.median(self.a_us)
        return (ma - statistics.median(self.b_us)) / ma


KV_CASES = ("new lengths", "seen before", "same length")


@dataclass
class HostCheck:
    """Where a backend's step time goes, on a fresh decoder whose KV lengths this process has not used before: its
    wall time per step (hot, synchronized after each step) when each step's KV length is one the process has never
    run ("new lengths": decoding), when the same lengths are run again after rewinding the cache ("seen before"),
    and when the cache is cropped back after each step ("same length"); and torch.profiler's CPU time of the SDPA op
    per call in 4 more steps of the same kind."""
    backend: str
    kv: str                         # one of KV_CASES
    ctx: int                        # the KV length at the first step
    wall_us: list[float]            # per step, in run order
    sdpa_cpu_us: float | None       # aten::scaled_dot_product_attention's CPU time per call (None: not seen)
    sdpa_calls: int

    @property
    def median_us(self) -> float:
        return statistics.median(self.wall_us)


@dataclass
class UserFix:
    model: str
    finding: str                    # the shape the change is aimed at
    change: str                     # what the user writes
    backend: str
    tried: dict[str, str]           # backend -> "ran" or why not
    at: list[FixAt]
    host: list[HostCheck] = field(default_factory=list)

    def host_check(self, backend: str, kv: str) -> HostCheck:
        for h in self.host:
            if (h.backend, h.kv) == (backend, kv):
                return h
        raise KeyError(f"no host check of {backend} with the KV {kv}")


@dataclass
class CourseCupti:
    steps: int
    ctx: int
    records: int                    # CUPTI's kernel records in all the steps
    own: crosscheck.Agreement
    profile: crosscheck.ProfileAgreement


@dataclass
class AuditData:
    copy_tbs: float                 # the copy ceiling measured in the same run (read + write)
    launch_us: float                # a trivial kernel's launch in a graph: the floor's fixed part
    models: list[ModelAudit]
    fix: UserFix | None
    course: CourseCupti | None
    errors: dict[str, str]          # a model or part that failed, with its error
    seconds: dict[str, float]
    source: str = field(default="", metadata={RECORDED: False})

    def model(self, name: str) -> ModelAudit:
        for m in self.models:
            if m.name == name:
                return m
        raise KeyError(f"no audit of {name!r}; recorded: {', '.join(m.name for m in self.models)}")

    @property
    def offenders(self) -> list[Floor]:
        return [f for m in self.models for f in m.floors]


# ------------------------------------------------------------------ live
def _audit_model(name: str, steps: int, top: int, copy_tbs: float,  # pragma: no mutate block (live only)
                 launch_us: float) -> ModelAudit:
    d = models.Decoder(name)
    trace = profilers.run(d.step, steps=steps, warmup=models.WARMUP, tool="torch")
    rows = shapes.table(trace)
    params, build_s = d.parameters, d.build_s
    d.close()
    off = floors.offenders(rows, top)
    n = floors.steps_needed(off)
    t0 = time.perf_counter()
    NCU_DIR.mkdir(parents=True, exist_ok=True)
    raw = NCU_DIR / f"{name}.ncu.csv"
    fl = floors.measure([sys.executable, "-m", "launchlab.sections.s11_audit.models", name, "--steps", str(n)],
                        off, copy_tbs, launch_us, others=rows, timeout_s=420, keep=raw)
    if raw.exists():                 # ncu's own CSV beside the recording: the floors' evidence, as ncu wrote it
        with open(raw, "rb") as f, gzip.open(raw.with_suffix(".csv.gz"), "wb", compresslevel=9) as z:
            shutil.copyfileobj(f, z)
        raw.unlink()
    s = models.spec(name)
    return ModelAudit(name, s.label, s.model_cls, dict(s.config), params, models.PREFILL, steps, trace.gpu.name,
                      trace.gpu.sm_count, sum(r.calls for r in rows) / trace.steps, sum(r.us_per_step for r in rows),
                      shapes.idle_share(rows), rows, fl, n, round(time.perf_counter() - t0, 1), round(build_s, 2))


def _attention(rows: list[Shape]) -> list[str]:
    words = ("sdpa", "flash", "fmha", "attention", "attn")
    return [r.key for r in rows if any(w in r.kernel.lower() for w in words)]


def _arm(d: "models.Decoder", label: str, backend: str) -> Arm:  # pragma: no mutate block (live only)
    with models.backend(backend):
        trace = profilers.run(d.step, steps=STEPS, warmup=2, tool="torch")
    rows = shapes.table(trace)
    return Arm(label, backend, rows, _attention(rows))


def _rep(d: "models.Decoder", backend: str, steps: int) -> float:  # pragma: no mutate block (live only)
    torch = d.torch
    with models.backend(backend):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            d.step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / steps * 1e6


def _fix_at(ctx: int, backend: str, pairs: int, steps_per_rep: int) -> FixAt:  # pragma: no mutate block (live only)
    d = models.Decoder(FIX_MODEL, prefill=ctx)
    try:
        for _ in range(2):                       # both arms warm before the clock
            _rep(d, "default", 2)
            _rep(d, backend, 2)
        first, a_us, b_us, order = d.ctx, [], [], ""
        for _ in range(pairs):
            for arm in "ABBA":
                (a_us if arm == "A" else b_us).append(_rep(d, "default" if arm == "A" else backend, steps_per_rep))
                order += arm
        a = _arm(d, "default SDPA (torch's choice)", "default")
        b = _arm(d, f"SDPA limited to {backend}", backend)
        return FixAt(first, order, a_us, b_us, steps_per_rep, a, b)
    finally:
        d.close()


def _host(d: "models.Decoder", backend: str, kv: str, steps: int) -> HostCheck:  # pragma: no mutate block (live only)
    from torch.profiler import ProfilerActivity, profile
    torch, walls = d.torch, []
    if kv == "seen before":
        d.rewind(d.start)                        # the lengths "new lengths" ran, run again
    start = d.ctx

    def one():
        n = d.ctx
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        d.step()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - t0) * 1e6)
        if kv == "same length":
            d.rewind(n)

    with models.backend(backend):
        for _ in range(steps):
            one()
        timed = list(walls)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(4):
                one()
    ev = [e for e in prof.key_averages() if e.key == "aten::scaled_dot_product_attention"]
    cpu = ev[0].cpu_time_total / ev[0].count if ev and ev[0].count else None
    return HostCheck(backend, kv, start, [round(w, 1) for w in timed], None if cpu is None else round(cpu, 1),
                     ev[0].count if ev else 0)


def _hosts(backend: str, steps: int = 12) -> list[HostCheck]:  # pragma: no mutate block (live only)
    """Each backend on a decoder of its own, at a prefill no other part of the recording decodes near (cuDNN's
    graph cache is the process's: a length the ABBA ran would be a hit)."""
    out = []
    for b, prefill in (("default", HOST_PREFILL), (backend, HOST_PREFILL + 512)):
        d = models.Decoder(FIX_MODEL, prefill=prefill)
        try:
            for kv in KV_CASES:
                out.append(_host(d, b, kv, steps))
        finally:
            d.close()
    return out


def _user_fix(pairs: int, steps_per_rep: int, contexts,  # pragma: no mutate block (live only)
              finding: str = "") -> UserFix:
    """`finding`: the audit's attention shapes of the model (what the change is aimed at)."""
    tried, chosen = {}, None
    d = models.Decoder(FIX_MODEL)
    try:
        for b in FIX_CANDIDATES:
            try:
                with models.backend(b):
                    d.step()
                    d.torch.cuda.synchronize()
                tried[b] = "ran"
                chosen = chosen or b
            except RuntimeError as e:
                tried[b] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    finally:
        d.close()
    if chosen is None:
        return UserFix(FIX_MODEL, "", "", "", tried, [])
    at = [_fix_at(c, chosen, pairs, steps_per_rep) for c in contexts]
    finding = finding or (", ".join(at[0].a.attention) if at else "")
    return UserFix(FIX_MODEL, finding,
                   f"with torch.nn.attention.sdpa_kernel(SDPBackend.{chosen}): ...the decode step...", chosen,
                   tried, at, _hosts(chosen))


def course_document(steps: int = COURSE_STEPS, ctx: int = COURSE_CTX) -> dict:  # pragma: no mutate block (live only)
    """The course's decode step (every layer, main's gates) warmed up, then `steps` eager steps under CUPTI: its
    kernel records with the course's own launch log of the same steps (what tools/audit_record.py writes to
    data/audit/course_decode.cupti.json.gz, and what `_course` checks)."""
    import cupy as cp
    model = decode.build(decode.Config(layers=decode.FULL_LAYERS), ctx=ctx, extra=steps + 2)
    logs = []
    with gates.setting(**gates.preset("main")):
        model.step(ctx)                              # every kernel loaded before CUPTI listens
        cp.cuda.Device().synchronize()
        with profilers.cupti_records() as records:
            for i in range(steps):
                logs.append([[x.site, x.kernel, list(x.grid), x.block, x.smem] for x in model.launches(ctx + i)])
    doc = profilers.cupti_document(records, steps, ctx=ctx, preset="main",
                                   course_log_fields=["site", "kernel", "grid", "block", "smem"], course_log=logs)
    del model
    cp.get_default_memory_pool().free_all_blocks()
    return doc


def _course(steps: int, ctx: int) -> CourseCupti:  # pragma: no mutate block (live only)
    doc = course_document(steps, ctx)
    return CourseCupti(steps, ctx, len(doc["records"]), crosscheck.against_log(doc),
                       crosscheck.against_profile(doc, lab.recorded().profile))


def measure(names: tuple[str, ...] = tuple(models.MODELS), steps: int = STEPS, top: int = TOP, pairs: int = 10,
            steps_per_rep: int = 8, contexts: tuple[int, ...] = FIX_CONTEXTS,
            course: bool = True) -> AuditData:  # pragma: no mutate block (live only)
    mode.require_live("auditing transformers decode steps")
    ref = floors.reference()
    copy, launch_us = ref.copy_tbs, ref.launch_us
    out, errors, secs = [], {}, {}
    for n in names:
        t0 = time.perf_counter()
        try:
            out.append(_audit_model(n, steps, top, copy, launch_us))
        except Exception as e:  # noqa: BLE001 - recorded with its error; the other models still run
            errors[n] = f"{type(e).__name__}: {e}"[:500]
        secs[n] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    fix = None
    try:
        audited = [m for m in out if m.name == FIX_MODEL]
        fix = _user_fix(pairs, steps_per_rep, contexts, ", ".join(_attention(audited[0].rows)) if audited else "")
    except Exception as e:  # noqa: BLE001
        errors["user_fix"] = f"{type(e).__name__}: {e}"[:500]
    secs["user_fix"] = round(time.perf_counter() - t0, 1)
    cc = None
    if course:
        t0 = time.perf_counter()
        try:
            cc = _course(COURSE_STEPS, COURSE_CTX)
        except Exception as e:  # noqa: BLE001
            errors["course"] = f"{type(e).__name__}: {e}"[:500]
        secs["course"] = round(time.perf_counter() - t0, 1)
    return AuditData(copy, launch_us, out, fix, cc, errors, secs, source="live")


_parse, _dump = recordings.codec(AuditData, "audit", "section11")

DOOR: Door[AuditData] = Door("the audit of three transformers decode steps", "section11",
                             ("decode_ops", "rms_norm", "kda_decode", "mla_decode", "stream_read", "spin", "waves"),
                             measure, _parse, _dump, replayed_live=True)
data = DOOR.data
recorded = DOOR.recorded


def steps_from(d: AuditData) -> dict:
    """What made each committed record's steps, read from the record as the audit reads it: the mark (a model's
    torch.profiler trace), or the recorder's count (the course's CUPTI record)."""
    out = {m.name: launches.load(NCU_DIR / f"{m.name}.trace.json.gz").steps_from for m in d.models}
    cupti = NCU_DIR / "course_decode.cupti.json.gz"
    if cupti.exists():
        out["course_decode"] = launches.load(cupti).steps_from
    return out


def headline(d: AuditData) -> dict:
    """The summary's "audit" (its "archs", the architectures whose limits the calculator has checked against
    NVIDIA's table, is added by faces.summary, which reads that check's report)."""
    fix = d.fix.at[0].gain * 100 if d.fix and d.fix.at else None
    return {"models_audited": [m.name for m in d.models],
            "grep_apis": list(sites.GREP_APIS),
            "steps_from": steps_from(d),
            "launch_shapes": {m.name: len(m.rows) for m in d.models},
            "idle_share_of_gpu_time": {m.name: round(100 * m.idle_share, 1) for m in d.models},
            "offenders": len(d.offenders),
            "offenders_with_floor": sum(1 for f in d.offenders if f.has_floor),
            "cupti_path_kernels": d.course.profile.matched_per_step if d.course else 0,
            "cupti_path_agrees": bool(d.course and d.course.own.agrees and d.course.profile.agrees),
            "user_fix_gain_pct": None if fix is None else round(fix, 2),
            "user_fix_kernel_us_per_step": None if fix is None else
            {"A": round(d.fix.at[0].a.us_per_step, 1), "B": round(d.fix.at[0].b.us_per_step, 1)},
            "user_fix_idle_sm_us_per_step": None if fix is None else
            {"A": round(d.fix.at[0].a.idle_sm_us, 1), "B": round(d.fix.at[0].b.idle_sm_us, 1)}}


def table(m: ModelAudit, top: int = 8, by: str = "sms") -> str:
    """One model's ranking as the audit prints it (launchlab.audit.shapes.lines), headed by what was recorded."""
    head = (f"{m.label}: {m.parameters / 1e9:.2f} B parameters, batch 1, decoding from ctx {m.prefill}; {m.gpu}, "
            f"{m.sm_count} SMs; {m.steps} steps under torch.profiler; ranked by idle SM-time")
    return "\n".join([width.fit(head, hang=2)] + shapes.lines(m.rows, m.steps, top, by))


def overview(d: AuditData) -> str:
    """Each model in two lines or so: its size, its launches and kernel time per step, and the idle share."""
    return "\n".join(f"{m.label}\n" + width.fit(
        f"    {m.parameters / 1e9:.2f} B parameters, {m.launches_per_step:.0f} launches and {m.us_per_step:,.0f} µs "
        f"of kernel time per step, {len(m.rows)} launch shapes; {m.idle_share:.0%} of that time in launches that "
        f"leave more than half of the {m.sm_count} SMs idle", hang=4) for m in d.models)


def floors_text(d: AuditData) -> str:
    """Step 4 for every model's offenders: what ncu measured, each offender's floor and verdict (cold times)."""
    out = [f"copy ceiling {d.copy_tbs:.2f} TB/s (read + write), a launch {floors.duration(d.launch_us)}; "
           f"every time below is cold"]
    for m in d.models:
        out += ["", f"{m.label}: ncu on {m.ncu_steps} steps, {m.ncu_seconds:.0f} s"]
        out += [f.line("  ") for f in m.floors]
    return "\n".join(out)


def spread_text(f: Floor, every: int = 8) -> str:
    """One offender's cold calls, sorted, every `every`-th: what a wide robust spread is made of."""
    return width.fit(f"{shapes.short(f.shape.kernel, 60)} grid {f.shape.grid}: {f.calls} calls, cold µs (every "
                     f"{every}th, sorted): " + " ".join(f"{x:.1f}" for x in sorted(f.cold_us)[::every]), hang=2)


def fix_text(fix: UserFix) -> str:
    """The user's change, measured ABBA at each context: per-rep step times, the median change, and what the GPU's
    work did (kernel time and idle SM-time per step, the attention kernels' grids)."""
    out = [width.fit(f"tried: " + "; ".join(f"{k}: {v}" for k, v in fix.tried.items()), hang=2)]
    for at in fix.at:
        out += ["", width.fit(f"ABBA at ctx {at.ctx:,}: A = torch's choice, B = SDPA limited to {fix.backend}; ms "
                              f"per step, run order {''.join(at.order[:8])}...", hang=2)]
        out.append(width.fit("  A: " + " ".join(f"{x / 1e3:.1f}" for x in at.a_us), hang=5))
        out.append(width.fit("  B: " + " ".join(f"{x / 1e3:.1f}" for x in at.b_us), hang=5))
        out.append(width.fit(f"  median step {-at.gain:+.1%}; kernel time per step A {at.a.us_per_step:.0f} µs, "
                             f"B {at.b.us_per_step:.0f} µs; idle SM-time per step A {at.a.idle_sm_us:.0f} µs, "
                             f"B {at.b.idle_sm_us:.0f} µs", hang=4))
        for arm in (at.a, at.b):
            for r in arm.attention_rows:
                out.append(width.fit(f"    {arm.label}: {shapes.short(r.kernel, 44)} grid {r.grid} x {r.block[0]}, "
                                     f"{r.us_per_step:.1f} µs per step", hang=6))
    return "\n".join(out)


def course_text(c: CourseCupti) -> str:
    """The CUPTI path on the course's own decode step, against its launch log and notebook 09's step profile."""
    return width.fit_all(
        f"CUPTI: {c.records:,} kernel records in {c.steps} steps at ctx {c.ctx:,}\n"
        f"against the course's launch log: {c.own.matched:,} of {c.own.course_launches:,} launches matched on "
        f"kernel, grid and block; {len(c.own.mismatches)} mismatches; cuBLAS: {c.own.cublas_calls:,} calls as "
        f"{c.own.cublas_kernels:,} kernels\n"
        f"against notebook 09's step profile: {c.profile.matched_per_step:,} of {c.profile.launches_per_step:,} "
        f"launches per step in {c.profile.shapes} shapes, {len(c.profile.mismatches)} mismatches")


def host_lines(fix: UserFix) -> list[str]:
    """The host check, one line per backend and KV case."""
    out = [f"{'backend':<22} {'KV length':<12} {'from ctx':>8} {'median ms/step':>14} {'min':>6} {'max':>7} "
           f"{'SDPA CPU µs/call':>16}"]
    for h in fix.host:
        name = "torch's choice" if h.backend == "default" else h.backend
        cpu = "" if h.sdpa_cpu_us is None else f"{h.sdpa_cpu_us:,.0f}"
        out.append(f"{name:<22} {h.kv:<12} {h.ctx:>8,} {h.median_us / 1e3:>14.1f} {min(h.wall_us) / 1e3:>6.1f} "
                   f"{max(h.wall_us) / 1e3:>7.1f} {cpu:>16}")
    return out
