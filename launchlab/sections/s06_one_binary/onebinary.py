"""§6: one binary, two arms -- the decode step measured with its gates flipped at run time, in one process.

    eval     ms/token and tok/s at ctx 131,072: N consecutive steps captured in one CUDA graph and replayed
             (the scoring instrument: the context the score is read at)
    bench    the marginal token at a short context: (t(136 tokens) - t(8 tokens)) / 128, each a graph replay
             (the quick instrument: it cancels what every run pays once, and reads a short context)
    abba     one gate (or the `main` preset against the fixed defaults), A B B A ..., each rep a graph replay
             of N steps, the per-rep numbers kept. The gates are read while a graph is captured, so each arm
             is its own graph of the same kernels from the same loaded modules: nothing is rebuilt.

The section06 recording holds all of it at full depth (93 layers): the profile of one step under `main` and
under the fixed defaults at both contexts (launchlab.sections.s06_one_binary.stepprofile), eval and bench of main against fixed, an
ABBA per decode gate, the launches that differ between the arms, the modules loaded before and after (one
build), memory, and ncu's achieved occupancy of the top offenders beside the calculator's.
"""
from __future__ import annotations

import os
import re
import statistics
from dataclasses import asdict, dataclass, field

from launchlab.core import gates, loader, mode, occupancy, profile, sharing, timing
from launchlab.core.door import Door
from launchlab.core.width import WIDTH
from launchlab.kernels import decode, mla, residual_add
from launchlab.sections.s06_one_binary import stepprofile

CTX = 131_072            # eval's context: the scored one
SHORT_CTX = 2048         # bench's context
EVAL_TOKENS = 8
BENCH_LONG, BENCH_SHORT = 136, 8
# The decode step's gates: the ones whose `main` and fixed arms differ in a launch the step makes.
DECODE_GATES = ("RMS_WIDE", "KDA_BODY", "KDA_VT", "KDA_ELIDE", "MLA_FLOOR")
PLANTED_ROLES = ("kda.step", "mla.split")        # plus every RMS norm: the kernels the planted gates change
# The lecture's figures (§6): PR #77's two instruments (tok/s before -> after) and PR #127's ABBA reps (ms).
LECTURE_EVAL = (18.88, 20.15)                    # kimi_k3_eval.sh, +6.7 %
LECTURE_BENCH = (18.86, 20.03)                   # kimi_k3_tp_bench, 136 tokens, 3 reps, +6.2 %
LECTURE_ABBA = {"A_this": (16.88, 16.87, 16.88), "B_main": (20.46, 20.50, 20.46)}


def planted(row: "stepprofile.Row") -> bool:
    """A row of a kernel a planted flaw changes: every RMS norm, the KDA step, the MLA split."""
    return row.kernel.startswith("rms_norm:") or row.role in PLANTED_ROLES


# ------------------------------------------------------------------ the instruments
@dataclass
class Eval:
    ctx: int
    tokens: int
    timing: timing.Timing            # per-token µs of each replay (the graph holds `tokens` steps)

    @property
    def ms_per_token(self) -> float:
        return self.timing.median / 1e3

    @property
    def tok_s(self) -> float:
        return 1e3 / self.ms_per_token


def _warm(model: "decode.Model", positions: list[int], warmed: tuple[int, ...] = ()) -> None:
    """Before a capture: every kernel the graph will launch loaded, outside the capture. A step allocates
    nothing (its scratch is carved when the model is built), and its positions differ only in the context
    length, which changes a launch's split count and arguments, never which kernels run: a step at the first
    and at the last position loads them all (warming every position cost the bench ~270 eager steps).
    `warmed`: positions the caller has just stepped under the same gates and overrides, not stepped again."""
    import cupy as cp
    for p in sorted({positions[0], positions[-1]} - set(warmed)):
        model.step(p)
    cp.cuda.Device().synchronize()


def _graph_timing(model: "decode.Model", positions: list[int], reps: int, label: str,
                  warmed: tuple[int, ...] = ()) -> timing.Timing:
    _warm(model, positions, warmed)
    g, stream = model.graph(positions)
    return timing.Timing(timing._replay(g, stream, len(positions), reps, 2), "graph", len(positions), label,
                         sharing.note())


def eval_step(model: "decode.Model", tokens: int = EVAL_TOKENS, reps: int = 5, warmed: tuple[int, ...] = ()) -> Eval:
    """ms/token at the model's context over `tokens` consecutive positions, the steps in one CUDA graph
    (`warmed`: positions just stepped eagerly under the same settings, see _warm)."""
    mode.require_live("timing the decode step")
    pos = list(range(model.ctx, model.ctx + tokens))
    return Eval(model.ctx, tokens, _graph_timing(model, pos, reps, f"eval ctx {model.ctx}", warmed))


def _positions(model: "decode.Model", start: int, n: int) -> list[int]:
    if start + n > model.capacity:
        raise decode.DecodeError(f"{n} tokens from position {start} need capacity {start + n}; the model has "
                                 f"{model.capacity} (build it with a larger extra=)")
    return list(range(start, start + n))


@dataclass
class Bench:
    """The marginal instrument, both arms: per rep, each arm's long and short graphs replayed once."""
    start: int
    long: int
    short: int
    order: list[str]                                  # "A"/"B" per rep (A B B A ...)
    long_ms: list[float]                              # per rep: the long graph, ms in all
    short_ms: list[float]
    labels: tuple[str, str] = ("A", "B")

    @property
    def marginal_ms(self) -> list[float]:
        """Per rep: ms per token of the tokens past the first `short`."""
        return [(a - b) / (self.long - self.short) for a, b in zip(self.long_ms, self.short_ms)]

    def arm(self, which: str) -> list[float]:
        return [m for o, m in zip(self.order, self.marginal_ms) if o == which]

    def median(self, which: str) -> float:
        return statistics.median(self.arm(which))

    def to_dict(self) -> dict:
        return asdict(self) | {"labels": list(self.labels)}

    @classmethod
    def from_dict(cls, d: dict) -> "Bench":
        return cls(d["start"], d["long"], d["short"], d["order"], d["long_ms"], d["short_ms"], tuple(d["labels"]))


def _arm_graphs(model, arms: dict[str, dict], positions: list[int]) -> dict:
    """One CUDA graph per arm ({"A": {gate: value}, ...}), each captured with its gates set. A graph is kept
    on the model under every gate's value, the positions, the model's overrides and the residual-add plan the
    lab's learner registered (LAUNCHLAB_LAB_ADD): an ABBA against main (or
    fixed) after the first replays the graph already captured instead of capturing the same launches again
    (capturing costs as much host time as running the steps eagerly). Replaying it re-runs the same launches
    on the same buffers, as every rep of one ABBA already does."""
    out = {}
    for name, arm in arms.items():
        with gates.setting(**arm):
            key = (tuple(gates.value(g) for g in sorted(gates.GATES)), tuple(positions),
                   tuple(sorted(model.overrides.items())), residual_add.active(model.cfg.hidden))
            if key not in model.graphs:
                _warm(model, positions)
                model.graphs[key] = model.graph(positions)
            out[name] = model.graphs[key]
    return out


def bench(model: "decode.Model", arm_a: dict, arm_b: dict, start: int = SHORT_CTX, long: int = BENCH_LONG,
          short: int = BENCH_SHORT, pairs: int = 3, labels=("A", "B")) -> Bench:
    """The marginal of `long` over `short` tokens from position `start`, both arms, ABBA over `pairs`."""
    mode.require_live("benching the decode step")
    import cupy as cp
    if not 0 < short < long:
        raise ValueError(f"bench needs 0 < short < long, got short={short}, long={long}")
    graphs = {}
    for n in (long, short):
        pos = _positions(model, start, n)
        for name, gs in _arm_graphs(model, {"A": arm_a, "B": arm_b}, pos).items():
            graphs[name, n] = gs

    def once(name, n):
        g, stream = graphs[name, n]
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(stream)
        g.launch(stream)
        b.record(stream)
        b.synchronize()
        return cp.cuda.get_elapsed_time(a, b)

    for key in graphs:                                 # one warm replay each
        once(*key)
    order = timing.abba_order(pairs)
    long_ms, short_ms = [], []
    for o in order:
        long_ms.append(once(o, long))
        short_ms.append(once(o, short))
    return Bench(start, long, short, order, long_ms, short_ms, tuple(labels))


def abba(model: "decode.Model", arm_a: dict, arm_b: dict, tokens: int = EVAL_TOKENS, pairs: int = 3,
         reps: int = 3, labels: tuple[str, str] = ("A", "B")) -> timing.ABBA:
    """Two gate settings ({gate name: value}), each captured into its own graph of `tokens` steps from the
    model's context, replayed A B B A ... `pairs` times; each rep is `reps` replays (µs per token)."""
    mode.require_live("ABBA of the decode step")
    pos = _positions(model, model.ctx, tokens)
    graphs = _arm_graphs(model, {"A": arm_a, "B": arm_b}, pos)

    def rep(name):
        g, stream = graphs[name]
        return timing.Timing(timing._replay(g, stream, len(pos), reps, 1), "graph", len(pos),
                             labels[name == "B"], sharing.note())

    return timing.abba(lambda: rep("A"), lambda: rep("B"), pairs, labels)


def gain_pct(a: float, b: float) -> float:
    """tok/s gain of going from time a to time b."""
    return 100 * (a / b - 1)


# ------------------------------------------------------------------ the recording
@dataclass
class GateRun:
    """ABBA of one gate at full depth: A = the fixed defaults, B = the same with this gate at main's value."""
    gate: str                         # a gate name, or "preset" for main against fixed
    fixed: str
    main: str
    abba: timing.ABBA

    def ms(self, which: str) -> list[float]:
        """Per-rep ms/token of arm "A" (fixed) or "B" (main)."""
        return [m / 1e3 for m in self.abba.medians(which)]

    @property
    def fixed_ms(self) -> float:
        return statistics.median(self.ms("A"))

    @property
    def main_ms(self) -> float:
        return statistics.median(self.ms("B"))

    @property
    def cost_ms(self) -> float:
        """What main's arm of this gate adds per token."""
        return self.main_ms - self.fixed_ms

    @property
    def spread_ms(self) -> float:
        """The larger of the two arms' rep ranges (max - min of the per-rep medians)."""
        return max(max(self.ms(w)) - min(self.ms(w)) for w in "AB")

    def to_dict(self) -> dict:
        return {"gate": self.gate, "fixed": self.fixed, "main": self.main, "abba": self.abba.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> "GateRun":
        return cls(d["gate"], d["fixed"], d["main"], timing.ABBA.from_dict(d["abba"]))


@dataclass
class NcuCheck:
    """ncu's achieved occupancy of one launch of the step beside the calculator's theoretical figure."""
    preset: str
    kernel: str
    grid: int
    block: int
    achieved_pct: float
    ncu_theoretical_pct: float
    calculator_pct: float


@dataclass
class Modules:
    """Kernel modules loaded in the measuring process: one build serves every arm."""
    before: int                           # before the first arm ran
    after_fixed_arm: int
    after_all_arms: int
    pid: int


@dataclass
class OneBinaryData:
    source: str
    layers: int
    ctx: int
    short_ctx: int
    restore_set: str
    gate_arms: dict                       # decode gate -> [main value, fixed value]
    modules: Modules
    arm_diff: list                        # [role, main launch, fixed launch] for the launches that differ
    profiles: dict                        # "main 131072", "fixed 131072", "main 2048", "fixed 2048" -> Profile
    eval: GateRun                         # main against fixed at ctx, N tokens per graph
    gates: list[GateRun]                  # each decode gate alone
    bench: Bench                          # A = fixed, B = main
    memory_gib: float                     # device memory in use with the full-depth model built
    ncu: list[NcuCheck] = field(default_factory=list)
    ncu_error: str | None = None

    def profile(self, preset: str, ctx: int | None = None) -> "stepprofile.Profile":
        return self.profiles[f"{preset} {ctx or self.ctx}"]

    def gate(self, name: str) -> GateRun:
        return next(g for g in self.gates if g.gate == name)

    @property
    def eval_gain_pct(self) -> float:
        return gain_pct(self.eval.main_ms, self.eval.fixed_ms)

    @property
    def bench_gain_pct(self) -> float:
        return gain_pct(self.bench.median("B"), self.bench.median("A"))

    def planted_share(self, preset: str = "main") -> float:
        return self.profile(preset).share(planted)


def _launch_text(x: "decode.Launch") -> str:
    return f"{x.kernel} grid {list(x.grid)} block {x.block}"


def _arm_diff(model, pos: int) -> list:
    logs = {}
    for name in ("main", "fixed"):
        with gates.setting(**gates.preset(name)):
            logs[name] = model.launches(pos)
    out, seen = [], set()
    for a, b in zip(logs["main"], logs["fixed"]):
        if (a.kernel, a.grid, a.block) != (b.kernel, b.grid, b.block) and (a.role, _launch_text(a)) not in seen:
            seen.add((a.role, _launch_text(a)))
            out.append([a.role, _launch_text(a), _launch_text(b),
                        sum(1 for x in logs["main"] if x.role == a.role)])
    return out


NCU_REGEX = r"rms_norm|kda_|mla_split"


def ncu_launches(preset: str, layers: int = 3, ctx: int = CTX) -> None:
    """What the ncu child runs: one step of a short model (MLA, KDA, MLA) at `ctx` under a preset."""
    with gates.setting(**gates.preset(preset)):
        m = decode.build(decode.Config(layers=layers), ctx=ctx, extra=2)
        m.step(ctx)


def ncu_checks() -> list[NcuCheck]:
    out = []
    for preset in ("main", "fixed"):
        rows = profile.ncu(f"from launchlab.sections.s06_one_binary import onebinary; onebinary.ncu_launches({preset!r})", NCU_REGEX)
        seen = set()
        for r in rows:
            key = (r.kernel.split("(")[0], r.grid, r.block)
            if key in seen:
                continue
            seen.add(key)
            regs = int(r.metrics["launch__registers_per_thread"])
            calc = occupancy.occupancy(r.block, regs, _smem_of(r.kernel, preset))
            out.append(NcuCheck(preset, key[0], r.grid, r.block, r.achieved_pct, r.theoretical_pct,
                                100 * calc.fraction))
    return out


def _smem_of(ncu_name: str, preset: str) -> int:
    """Shared memory per block of a profiled launch, from the course's own plan (ncu names the kernel only)."""
    if "mla_split" in ncu_name:
        with gates.setting(**gates.preset(preset)):
            return mla.plan(1, 16, CTX).smem
    return 0


def measure(layers: int = decode.FULL_LAYERS, ctx: int = CTX, short_ctx: int = SHORT_CTX,
            tokens: int = EVAL_TOKENS, pairs: int = 3, reps: int = 3, profile_reps: int = 10,
            bench_long: int = BENCH_LONG, bench_short: int = BENCH_SHORT, with_ncu: bool = True) -> OneBinaryData:
    mode.require_live("measuring §6 on the decode step")
    import cupy as cp
    main, fixed = gates.preset("main"), gates.preset("fixed")
    model = decode.build(decode.Config(layers=layers), ctx=ctx, extra=tokens + 1)
    if short_ctx + bench_long > model.capacity:
        raise decode.DecodeError("the bench's positions must fit in the model's cache")
    free, total = cp.cuda.runtime.memGetInfo()
    before = len(loader._modules)
    with gates.setting(**fixed):
        model.step(ctx)                                              # load every kernel of the fixed arm
    loaded_fixed = len(loader._modules)
    arm_diff = _arm_diff(model, ctx)
    profiles = {}
    for c in (ctx, short_ctx):
        for name, arm in (("main", main), ("fixed", fixed)):
            with gates.setting(**arm):
                profiles[f"{name} {c}"] = stepprofile.profile(model, c, profile_reps, preset=name)
    ev = GateRun("preset", "fixed", "main", abba(model, fixed, main, tokens, pairs, reps, ("fixed", "main")))
    runs = []
    for g in DECODE_GATES:
        arm_b = dict(fixed, **{g: main[g]})
        runs.append(GateRun(g, fixed[g], main[g], abba(model, fixed, arm_b, tokens, pairs, reps,
                                                        ("fixed", f"{g}={main[g]}"))))
    b = bench(model, fixed, main, short_ctx, bench_long, bench_short, pairs, ("fixed", "main"))
    modules = Modules(before, loaded_fixed, len(loader._modules), os.getpid())
    del model
    cp.get_default_memory_pool().free_all_blocks()
    checks, err = [], (None if with_ncu else "not run in the course's quick live run (LAUNCHLAB_LIVE_FULL=1 runs it; "
                                               "the H200 recording has it)")
    if with_ncu:
        try:
            checks = ncu_checks()
        except (profile.ProfileError, OSError) as e:
            err = str(e)
    return OneBinaryData("live", layers, ctx, short_ctx, gates.restore_set(),
                         {g: [main[g], fixed[g]] for g in DECODE_GATES}, modules, arm_diff, profiles, ev, runs, b,
                         (total - free) / 2 ** 30, checks, err)


def _dump(d: OneBinaryData) -> dict:
    return {"layers": d.layers, "ctx": d.ctx, "short_ctx": d.short_ctx, "restore_set": d.restore_set,
            "gate_arms": d.gate_arms, "modules": asdict(d.modules), "arm_diff": d.arm_diff,
            "profiles": {k: p.to_dict() for k, p in d.profiles.items()}, "eval": d.eval.to_dict(),
            "gates": [g.to_dict() for g in d.gates], "bench": d.bench.to_dict(), "memory_gib": d.memory_gib,
            "ncu": [asdict(c) for c in d.ncu], "ncu_error": d.ncu_error}


def _parse(d: dict, source: str) -> OneBinaryData:
    return OneBinaryData(source, d["layers"], d["ctx"], d["short_ctx"], d["restore_set"], d["gate_arms"],
                         Modules(**d["modules"]), d["arm_diff"],
                         {k: stepprofile.Profile.from_dict(p) for k, p in d["profiles"].items()},
                         GateRun.from_dict(d["eval"]), [GateRun.from_dict(g) for g in d["gates"]],
                         Bench.from_dict(d["bench"]), d["memory_gib"], [NcuCheck(**c) for c in d["ncu"]],
                         d["ncu_error"])


DOOR: Door[OneBinaryData] = Door("one binary, two arms (§6)", "section06",
                                 ("decode_ops", "rms_norm", "kda_decode", "mla_decode"), measure, _parse, _dump,
                                 quick={"tokens": 4, "pairs": 2, "reps": 2, "profile_reps": 3, "bench_long": 24,
                                        "with_ncu": False})
data = DOOR.data
recorded = DOOR.recorded


# ------------------------------------------------------------------ what the notebook prints
def arm_diff_table(d: OneBinaryData) -> str:
    def short(launch: str) -> str:          # "rms_norm:rms_norm_f32 grid [1] block 128": the kernel names its file
        name, _, rest = launch.partition(" ")
        grid = re.sub(r"\[(\d+)(?:, 1)*\]", r"\1", rest)
        return f"{name.split(':', 1)[-1]} {grid}"
    out = [f"{'role':<14} {'calls':>5}  {'main':<38} fixed"]
    for role, a, b, n in d.arm_diff:
        out.append(f"{role:<14} {n:>5}  {short(a):<38} {short(b)}")
    out.append("calls: per token; grid [x, y] of a two-dimensional launch, a bare number when it is one row of blocks")
    return "\n".join(out)


def gates_table(d: OneBinaryData) -> str:
    """Each gate's ABBA (A = the fixed defaults, B = that gate at main's value), per rep, in the order run."""
    import textwrap
    width = max(len(g.abba.order) for g in [d.eval] + d.gates) * 8
    out = [f"{'gate (LAUNCHLAB_...)':<22} {'reps in order, ms/token':<{width}} {'main - fixed':>12} {'gap/spread':>10}"]
    for g in [d.eval] + d.gates:
        name = "all: main vs fixed" if g.gate == "preset" else f"{g.gate}={g.main}"
        reps = " ".join(f"{'F' if o == 'A' else 'M'}{t.median / 1e3:.3f}" for o, t in zip(g.abba.order, g.abba.results))
        out.append(f"{name:<22} {reps:<{width}} {g.cost_ms:>+9.3f} ms {abs(g.cost_ms) / g.spread_ms:>10.1f}")
    singles = sum(g.cost_ms for g in d.gates)
    out += textwrap.wrap("F = fixed arm, M = main's arm; each rep is the median of "
                         f"{d.eval.abba.results[0].n} replays of an "
                         f"{d.eval.abba.results[0].launches_per_rep}-token graph at ctx {d.ctx:,}; spread = the wider "
                         "arm's max - min over its reps", 108)
    out.append(f"the five gates one at a time add up to {singles:+.3f} ms; all at once: {d.eval.cost_ms:+.3f} ms")
    return "\n".join(out)


GROUPS = (("327 RMS norms", lambda r: r.kernel.startswith("rms_norm:")), ("KDA step", lambda r: r.role == "kda.step"),
          ("MLA split", lambda r: r.role == "mla.split"), ("everything else", lambda r: not planted(r)))


def decomposition(d: OneBinaryData, ctx: int | None = None) -> list[tuple[str, float, float]]:
    """(group, main ms/token, fixed ms/token) from the two profiles at one context: where main's extra time is."""
    pm, pf = d.profile("main", ctx), d.profile("fixed", ctx)
    return [(name, sum(r.us_per_token for r in pm.rows if f(r)) / 1e3,
             sum(r.us_per_token for r in pf.rows if f(r)) / 1e3) for name, f in GROUPS]


def ncu_table(d: OneBinaryData) -> str:
    if d.ncu_error:
        return f"ncu did not run: {d.ncu_error}"
    out = [f"{'arm':<6} {'kernel':<24} {'grid':>5} {'block':>5} {'SMs':>4} {'calculator %':>12} {'ncu theor. %':>12} "
           f"{'ncu achieved %':>14}"]
    for c in d.ncu:
        out.append(f"{c.preset:<6} {c.kernel.replace('void ', '')[:24]:<24} {c.grid:>5} {c.block:>5} "
                   f"{min(c.grid, 132):>4} {c.calculator_pct:>12.1f} {c.ncu_theoretical_pct:>12.1f} {c.achieved_pct:>14.1f}")
    return "\n".join(out)


def headline(d: OneBinaryData) -> dict:
    """The figures summary --json reports for §6."""
    return {"decode_ms_per_token_main": d.eval.main_ms,
            "decode_ms_per_token_fixed": d.eval.fixed_ms,
            "rms_norms_per_token": d.profile("main").norms(),
            "eval_gain_pct": d.eval_gain_pct,
            "bench_gain_pct": d.bench_gain_pct,
            "planted_share_main_pct": 100 * d.planted_share("main"),
            "profile_sum_vs_graph_pct": 100 * d.profile("main").agreement,
            **gate_quantities(d)}


def gate_quantities(d: OneBinaryData) -> dict:
    """Each gate's worth inside the step, from its ABBA (fixed defaults vs the same with that gate at main's
    value, ctx 131,072): ms per token, and the tok/s its fix gains given the other fixes."""
    out = {}
    for g in DECODE_GATES:
        r = d.gate(g)
        out[f"{g.lower()}_gate_cost_ms_per_token"] = r.cost_ms
        out[f"{g.lower()}_gate_gain_pct"] = 100 * (r.main_ms / r.fixed_ms - 1)
    return out


def gate_list():
    """Every gate of the course as a table (its variable, value now, default = the fixed arm, baseline = main's
    arm, what it selects), then the restore set as a shell line that fits the page (one continuation per line)."""
    from IPython.display import Markdown
    rows = ["| gate | now | default | baseline | what it selects |", "|---|---|---|---|---|"]
    for g in sorted(gates.GATES.values(), key=lambda g: g.name):
        rows.append(f"| `{g.env}` | {gates.value(g.name)} | {g.default} | {g.baseline} | "
                    f"{g.doc.replace('|', chr(92) + '|')} |")
    words, lines, line = gates.restore_set().split(), [], "export"
    for w in words:
        if len(line) + 1 + len(w) + 2 > WIDTH:
            lines.append(line + " \\")
            line = "    "
        line += " " + w if line.strip() else w
    lines.append(line)
    return Markdown("\n".join(rows) + "\n\nThe restore set, every gate at main's arm:\n\n```sh\n" + "\n".join(lines)
                    + "\n```\n")
