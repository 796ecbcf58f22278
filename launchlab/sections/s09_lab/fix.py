"""The lab's steps 6-7: the learner's own fix of an offender no notebook fixes -- the residual add.

main's decode step adds each layer's attention and MLP output into the residual stream with decode_ops'
add_inplace: 28 blocks of 256 threads for the 7,168-wide row, 186 launches per token (the lab's profile).
The learner writes a plan -- (grid, block, ept) as a function of the width n -- registers it with `use`, and
the step launches it when LAUNCHLAB_LAB_ADD=1 (launchlab.kernels.residual_add); at 0 the step is main's, one
build either way. Then, in the learner's own cells:

    describe(plan)      the plan at n = 7,168 beside main's: blocks / SMs, the resident blocks per SM the
                        occupancy calculator gives for the NVRTC-compiled kernel, wave fill, and the coverage
                        check (a plan that misses elements or writes past the end is refused here, in words)
    rep(arms, name)     one ABBA rep of arm `name`: an 8-token CUDA graph of the whole step at ctx 131,072,
                        in ms/token. Every token streams gigabytes of weights and caches through the
                        60 MiB L2, so every rep reads them cold (from HBM). Live: captured and replayed now; replay: that arm's rep
                        as the H200 recorded it (recording `lab_fix`)
    cmp(arms, depth)    the two arms' dumps of every layer compared byte for byte at one depth
    order()             the arms in the order rep() was asked for them (the grader reads this, not a printout)
    problems6(plan, arms, sequence), problems7(arms, depths)
                        the public check of steps 6-7 (the notebook's grader.check): what the grader would refuse,
                        found on the CPU with the lecture's reason -- widths the plan fails, arms that are one
                        configuration or change a gate beyond LAUNCHLAB_LAB_ADD, an order that is not ABBA, a
                        comparison at one depth -- never the answer

The recording `lab_fix` holds every plan of BLOCKS x EPTS at the covering grid, each an ABBA of three pairs
against main and a cmp at both DEPTHS; and the reference plan with the MLA floor also derived in arm A (a change
that moves bytes at 131,072: the claim of identity that a single shallow cmp would let through).
"""
from __future__ import annotations

import hashlib
import math
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from launchlab.core import dumps, gates, hardware, loader, mode, occupancy, recordings, timing
from launchlab.core.door import Door
from launchlab.core.width import fit
from launchlab.kernels import decode, residual_add
from launchlab.sections.s06_one_binary import onebinary
from launchlab.sections.s09_lab import lab

N = decode.Config().hidden                      # the residual stream's width
CTX = onebinary.CTX
DEPTHS = (2048, CTX)
TOKENS = onebinary.EVAL_TOKENS
PAIRS = 3
REPS = 3                                        # graph replays per rep (its median is the rep)
POSITIONS = 2                                   # decode positions per dump
BLOCKS = (32, 64, 96, 128, 192, 256, 512, 1024)
EPTS = (1, 2, 4, 8)
REFERENCE = residual_add.Plan(224, 32, 1)       # 224 blocks of 32: one element per thread, 1.7 blocks per SM
MOVES_BYTES = {"MLA_FLOOR": "derived"}          # recorded beside the reference plan: a change cmp must catch
ENV = gates.PREFIX + residual_add.GATE


class FixError(ValueError):
    pass


def recorded_plans() -> list[residual_add.Plan]:
    return [residual_add.Plan(-(-N // (b * e)), b, e) for b in BLOCKS for e in EPTS]


# ------------------------------------------------------------------ what an arm is
@dataclass(frozen=True)
class Config:
    """One arm as the step sees it: the plan the residual add launches (None: main's add_inplace) and the
    gates it sets beyond main's, as (name, value) pairs."""
    plan: tuple | None
    extra: tuple = ()

    def text(self) -> str:
        what = "main's add_inplace" if self.plan is None else residual_add.Plan(*self.plan).text()
        return what + "".join(f", {gates.PREFIX}{k}={v}" for k, v in self.extra)


def settings(env: dict) -> dict:
    """An arm's environment ({"LAUNCHLAB_LAB_ADD": "1", ...}) as gate settings over main, refused in words
    if it names something that is not a gate or a value a gate does not take."""
    if not isinstance(env, dict):
        raise FixError(f"an arm is a dict of LAUNCHLAB_* variables, e.g. {{{ENV!r}: '1'}}; got {env!r}")
    out = dict(gates.preset("main"))
    for k, v in env.items():
        name = str(k)[len(gates.PREFIX):] if str(k).startswith(gates.PREFIX) else None
        if name not in gates.GATES:
            raise FixError(f"{k!r} is not a gate: an arm sets LAUNCHLAB_* gates ({', '.join(sorted(gates.GATES))})")
        if str(v) not in gates.GATES[name].choices:
            raise FixError(f"{k}={v!r} is not one of {', '.join(gates.GATES[name].choices)}")
        out[name] = str(v)
    return out


def config(env: dict) -> Config:
    s = settings(env)
    main = gates.preset("main")
    extra = tuple(sorted((k, v) for k, v in s.items() if v != main[k] and k != residual_add.GATE))
    if s[residual_add.GATE] != "1":
        return Config(None, extra)
    with gates.setting(**{residual_add.GATE: "1"}):
        p = residual_add.planned(N)
    return Config((p.grid, p.block, p.ept), extra)


# ------------------------------------------------------------------ the recording
@dataclass
class Run:
    """An ABBA of one arm (A) against main (B): the order and each rep's ms/token, as measured."""
    plan: list | None
    extra: list
    order: list[str]
    ms: list[float]

    def arm(self, which: str) -> list[float]:
        return [m for o, m in zip(self.order, self.ms) if o == which]


@dataclass
class Cmp:
    plan: list | None                 # arm A (arm B is main)
    extra: list
    depth: int
    identical: bool
    differing: int
    elements: int
    sha_a: str
    sha_b: str


@dataclass
class FixData:
    ctx: int
    layers: int
    tokens: int
    runs: list[Run]
    cmps: list[Cmp]
    same: list[Cmp]                   # main against main at each depth: the dumps are deterministic
    source: str = field(default="", metadata={recordings.RECORDED: False})

    def run(self, c: Config) -> Run | None:
        return next((r for r in self.runs if _cfg(r) == c), None)

    def cmp(self, c: Config, depth: int) -> Cmp | None:
        return next((x for x in self.cmps if _cfg(x) == c and x.depth == depth), None)


def _cfg(r) -> Config:
    return Config(None if r.plan is None else tuple(r.plan), tuple(tuple(e) for e in r.extra))


def _settings_of(c: Config) -> tuple[dict, object]:
    """(gate settings, the plan function) that make the step launch arm c."""
    s = dict(gates.preset("main"), **dict(c.extra))
    if c.plan is None:
        return s, None
    s[residual_add.GATE] = "1"
    p = tuple(c.plan)
    return s, (lambda n: p)


class _Using:
    """Register a plan function for a block, and put the learner's back after it."""

    def __init__(self, fn):
        self.fn, self.old = fn, None

    def __enter__(self):
        self.old = residual_add.registered()
        if self.fn is not None:
            residual_add.use(self.fn)

    def __exit__(self, *exc):
        residual_add.use(self.old)


def _graph(model, c: Config):  # pragma: no mutate block (live only)
    s, fn = _settings_of(c)
    with _Using(fn):
        pos = list(range(model.ctx, model.ctx + TOKENS))
        return onebinary._arm_graphs(model, {"X": s}, pos)["X"]


def _rep(model, c: Config) -> float:  # pragma: no mutate block (live only)
    """One rep: the arm's 8-token graph replayed REPS times (one warm replay first), the median, ms/token."""
    g, stream = _graph(model, c)
    return statistics.median(timing._replay(g, stream, TOKENS, REPS, 1)) / 1e3


def abba(model, a: Config, b: Config, pairs: int = PAIRS) -> Run:  # pragma: no mutate block (live only)
    """A B | B A | ...: each rep timed now; both graphs captured before the first rep."""
    _graph(model, a), _graph(model, b)
    order = timing.abba_order(pairs)
    return Run(None if a.plan is None else list(a.plan), [list(e) for e in a.extra], order,
               [_rep(model, a if o == "A" else b) for o in order])


def _dump(model, c: Config, depth: int, path: Path):  # pragma: no mutate block (live only)
    s, fn = _settings_of(c)
    with _Using(fn), gates.setting(**s):
        model.dump(path, list(range(depth, depth + POSITIONS)), tuple(range(model.cfg.layers)))
    return dumps.load(path)


def compare(model, a: Config, b: Config, depths=DEPTHS) -> list[Cmp]:  # pragma: no mutate block (live only)
    """Arm a against arm b, dumps of every layer at each depth compared byte for byte. Each arm runs the same
    sequence from the state the model was in (Model.save / restore): its steps at every depth, in order."""
    saved = model.save()
    out = []
    with tempfile.TemporaryDirectory() as d:
        got = {}
        for side, c in (("a", a), ("b", b)):
            model.restore(saved)
            for depth in depths:
                got[side, depth] = _dump(model, c, depth, Path(d) / f"{side}{depth}.dump")
        model.restore(saved)
        for depth in depths:
            r = dumps.cmp(got["a", depth], got["b", depth])
            out.append(Cmp(None if a.plan is None else list(a.plan), [list(e) for e in a.extra], depth,
                           r.identical, r.differing, r.elements, *r.fingerprints))
    return out


def _model(ctx: int = CTX, layers: int = decode.FULL_LAYERS):  # pragma: no mutate block (live only)
    m = lab._live.get("model")
    if m is None or m.ctx != ctx or m.cfg.layers != layers:
        m = lab._live["model"] = decode.build(decode.Config(layers=layers), ctx=ctx, extra=TOKENS + 1)
    return m


def measure(ctx: int = CTX, layers: int = decode.FULL_LAYERS, pairs: int = PAIRS) -> FixData:  # pragma: no mutate block (live only)
    mode.require_live("measuring the lab's fix")
    model = _model(ctx, layers)
    main = Config(None)
    arms = [Config(tuple(vars(p).values())) for p in recorded_plans()]
    arms.append(Config(tuple(vars(REFERENCE).values()), tuple(sorted(MOVES_BYTES.items()))))
    runs, cmps = [], []
    for c in arms:
        runs.append(abba(model, c, main, pairs))
        cmps += compare(model, c, main)
    same = compare(model, main, main)
    return FixData(ctx, layers, TOKENS, runs, cmps, same, source="live")


_parse, _dump_data = recordings.codec(FixData, "lab_fix", "lab_fix")
DOOR: Door[FixData] = Door("the lab's own fix (steps 6-7)", "lab_fix", ("decode_ops", "residual_add", "rms_norm",
                                                                      "kda_decode", "mla_decode"),
                           measure, _parse, _dump_data)
data = DOOR.data
recorded = DOOR.recorded


# ------------------------------------------------------------------ the learner's calls
def _blank(plan) -> bool:
    """The template's plan before it is written: it returns `...` somewhere."""
    try:
        got = plan(N)
    except TypeError:                       # `...` in the arithmetic: (... * ...) raises TypeError
        return True
    return isinstance(got, (tuple, list)) and any(v is Ellipsis for v in got)


def use(plan) -> None:
    """Register your plan function: LAUNCHLAB_LAB_ADD=1 launches what it returns for the step's width."""
    if not callable(plan):
        raise FixError("use() takes your plan function itself: fix.use(plan), not fix.use(plan(7168))")
    if _blank(plan):
        print("(the plan is not written yet: fill in block, ept and grid above)")
        return
    residual_add.check(residual_add.plan_of(plan(N)), N)      # refused here, in words, before any launch
    residual_add.use(plan)
    _order.clear()
    _served.clear()


def resident(block: int) -> occupancy.Occupancy:
    """The occupancy calculator for add_inplace_ept at this block, on the NVRTC-compiled registers."""
    res, _ = loader.compiled_resources(residual_add.FAMILY, residual_add.KERNEL)
    return occupancy.occupancy(block, res.registers, res.smem_static)


# Widths the notebook never shows, the grader's own (launchlab.faces.rerun.WIDTHS): a plan is tried at each,
# on CPU, by the kernel's index rule (residual_add.coverage), before the learner grades anything.
WIDTHS = (1, 2, 31, 1000, 1001, 2880, 5120, 7168, 7169, 100003)


def tried(plan, widths=WIDTHS) -> list[tuple[int, str]]:
    """(n, "" where the plan covers n exactly, else what goes wrong there in words) for each width: no plan of
    whole numbers, a plan the GPU cannot launch, elements never added, elements written past the end."""
    out = []
    for n in widths:
        try:
            p = residual_add.plan_of(plan(n))
        except residual_add.PlanError as e:
            out.append((n, str(e)))
            continue
        except Exception as e:  # noqa: BLE001 -- the learner's function, called at a width it was not written for
            out.append((n, f"plan({n}) raised {type(e).__name__}: {e}"))
            continue
        try:
            residual_add.check(p, n)
            out.append((n, ""))
        except residual_add.PlanError as e:
            c = residual_add.coverage(p, n) if p.grid >= 1 and p.block >= 1 and p.ept >= 1 else None
            if c is not None and c.missed:
                out.append((n, f"{c.missed:,} element{'s' * (c.missed != 1)} never added"))
            elif c is not None and c.past_end:
                out.append((n, f"{c.past_end:,} element{'s' * (c.past_end != 1)} written past the end of h"))
            else:
                out.append((n, str(e)))
    return out


def coverage_line(plan, widths=WIDTHS) -> str:
    """How the plan does at every width tried, as measured: all of them, or the ones it fails and how."""
    got = tried(plan, widths)
    bad = [(n, why) for n, why in got if why]
    if not bad:
        return (f"covers every width tried exactly ({len(got)} of {len(got)}: n = "
                f"{', '.join(f'{n:,}' for n, _ in got)}): every element added once, nothing past the end")
    shown = "; ".join(f"n = {n:,}: {why}" for n, why in bad[:4]) + ("; ..." if len(bad) > 4 else "")
    return f"covers {len(got) - len(bad)} of {len(got)} widths tried exactly; fails at {shown}"


def describe(plan, n: int = N) -> str:
    """The plan at width n beside main's: what it fills of the GPU; then, as measured on CPU by the kernel's
    index rule, the widths it covers exactly of those tried (WIDTHS: the grader's, which the notebook never shows)
    and how it fails at the others -- said without the answer."""
    if _blank(plan):
        return "(nothing to describe yet)"
    res, where = loader.compiled_resources(residual_add.FAMILY, residual_add.KERNEL)
    sms = hardware.spec("H200").sm_count
    rows = [f"add_inplace_ept: {res.registers} registers, {res.spill_stores} B spilled ({where})",
            f"{'':<6}{'grid':>6} {'block':>6} {'ept':>4} {'blocks/SMs':>11} {'resident/SM':>12} {'wave fill':>10}"]
    for name, p in (("main", residual_add.main_plan(n)), ("yours", residual_add.plan_of(plan(n)))):
        o = occupancy.occupancy(p.block, res.registers, res.smem_static) if 1 <= p.block <= 1024 else None
        fill = "" if o is None or not o.blocks_per_sm else f"{min(p.grid, o.blocks_per_wave) / o.blocks_per_wave:.1%}"
        rows.append(f"{name:<6}{p.grid:>6} {p.block:>6} {p.ept:>4} {p.grid / sms:>11.2f} "
                    f"{'' if o is None else o.blocks_per_sm:>12} {fill:>10}")
    try:
        residual_add.check(residual_add.plan_of(plan(n)), n)
    except residual_add.PlanError as e:
        rows.append(f"refused at n = {n:,}: {e}")
    rows.append(fit(coverage_line(plan), hang=2))
    return "\n".join(rows)


# ------------------------------------------------------------------ the public check of steps 6-7 (before grading)
RULE_ARMS = (f"§6: the arms differ in the one thing under test and nothing else -- your plan, {ENV}=1 in A "
             f"against 0 in B, every other gate main's")
RULE_ORDER = ("§6: three pairs, one rep of each arm per pair, the first arm alternating (ABBAAB or BAABBA), so a "
              "drift of the machine lands on both arms alike")
RULE_BYTES = "§7: a claim of identity compares the bytes of two different configurations, at more than one depth"


def _arms(arms, plan=None) -> tuple[Config, Config] | str:
    """Both arms as the step would read them. What they set is judged, not the plan (its widths are a check of
    their own): a plan that is not written, not registered or not valid at the step's width stands in as a
    covering one, the same in both arms."""
    plan = plan if plan is not None else residual_add.registered()
    if plan is None or _blank(plan) or tried(plan, (N,))[0][1]:
        plan = lambda n: (-(-n // REFERENCE.block), REFERENCE.block, 1)     # noqa: E731
    with _Using(plan):
        try:
            return _arm(arms, "A"), _arm(arms, "B")
        except (FixError, residual_add.PlanError) as e:
            return f"arms: {e}"


def problems6(plan, arms, sequence) -> list[str]:
    """What step 6's grader would refuse, found here on the CPU and said with the lecture's reason, never the
    answer: the plan at the grader's widths (which fail, and how), arms that are one configuration, arms that
    change a gate beyond the learner's own, arms the wrong way round, an order that is not an ABBA of three
    pairs. [] when nothing is wrong that the CPU can see (the times are the grader's to judge)."""
    out = []
    if _blank(plan):
        out.append("plan: not written yet")
    elif any(why for _, why in tried(plan)):
        out.append(f"plan: {coverage_line(plan)}")
    ab = _arms(arms, plan)
    if isinstance(ab, str):
        out.append(ab)
    else:
        a, b = ab
        if a == b:
            out.append(f"arms: A and B are the same configuration ({a.text()}): an A/B in which nothing differs "
                       f"measures nothing -- {RULE_ARMS}")
        else:
            for name, c in (("A", a), ("B", b)):
                if c.extra:
                    out.append(f"arms: arm {name} also sets "
                               f"{', '.join(f'{gates.PREFIX}{k}={v}' for k, v in c.extra)}: a gain would be that "
                               f"gate's as much as your plan's -- {RULE_ARMS}")
            if a.plan is None or b.plan is not None:
                out.append(f"arms: A launches your plan ({ENV}=1) and B main's ({ENV}=0)")
    if sequence not in ("ABBAAB", "BAABBA"):
        out.append(f"sequence: {sequence!r} is not an ABBA of three pairs -- {RULE_ORDER}")
    return out


def problems7(arms, depths) -> list[str]:
    """Step 7's comparison checked for what makes any claim on it empty, before grading: arms that are one
    configuration (a cmp of it with itself is identical by construction), fewer than two depths. The claim and
    its evidence are the learner's answer: the grader's to judge, not this check's."""
    out = []
    ab = _arms(arms)
    if isinstance(ab, str):
        out.append(ab)
    elif ab[0] == ab[1]:
        out.append(f"arms: A and B are the same configuration ({ab[0].text()}): its cmp with itself is identical "
                   f"by construction and shows nothing -- {RULE_BYTES}")
    if not (isinstance(depths, (list, tuple)) and len(set(depths)) >= 2):
        out.append(f"depths: {depths!r}: compare at two depths at least -- {RULE_BYTES}")
    return out


_order: list[str] = []
_served: dict = {}


def order() -> str:
    """The arms in the order rep() measured them, e.g. "ABBAAB"."""
    return "".join(_order)


def _arm(arms, name) -> Config:
    if not isinstance(arms, dict) or name not in arms:
        raise FixError(f"rep(arms, name): `arms` maps each arm's name to its LAUNCHLAB_* settings and `name` is "
                       f"one of its keys; got name {name!r} and arms {arms!r}")
    return config(arms[name])


def _gain(r: Run) -> float:
    """main's median rep less the plan's (ms/token): positive when the plan is faster."""
    return statistics.median(r.arm("B")) - statistics.median(r.arm("A"))


def around(plan: tuple, d: FixData) -> list[Run]:
    """The recorded plans around an unrecorded one, one on each side of the edit where the recording has one: the
    same block and ept at its recorded grid; the closest smaller and larger block at the same ept; the closest
    smaller and larger ept at the same block (each side's nearest by ratio, then the other knob)."""
    have = [r for r in d.runs if not r.extra and r.plan]
    grid, block, ept = plan

    def lg(a: int, b: int) -> float:
        return round(abs(math.log(a / b)), 9)

    sides = [[r for r in have if r.plan[1] == block and r.plan[2] == ept],
             sorted((r for r in have if r.plan[1] < block), key=lambda r: (lg(r.plan[1], block), lg(r.plan[2], ept))),
             sorted((r for r in have if r.plan[1] > block), key=lambda r: (lg(r.plan[1], block), lg(r.plan[2], ept))),
             sorted((r for r in have if r.plan[2] < ept), key=lambda r: (lg(r.plan[2], ept), lg(r.plan[1], block))),
             sorted((r for r in have if r.plan[2] > ept), key=lambda r: (lg(r.plan[2], ept), lg(r.plan[1], block)))]
    out: list[Run] = []
    for side in sides:
        if side and side[0] not in out and tuple(side[0].plan) != tuple(plan):
            out.append(side[0])
    return out


def unrecorded(c: Config, d: FixData) -> str:
    """Replay's answer for an arm whose reps were not recorded: what the CPU computes of it for real (the widths it
    covers, how it fills the H200) and the measured gains of the recorded plans around it -- never a time made up."""
    if c.plan is None or c.extra:
        return (f"{c.text()}: this arm was not recorded on the H200, so its reps need a GPU (live mode). Recorded: "
                f"the {len(d.runs) - sum(bool(r.extra) for r in d.runs)} plans of blocks {', '.join(map(str, BLOCKS))} "
                f"x ept {', '.join(map(str, EPTS))} at their covering grid against main's add, and "
                f"{REFERENCE.text()} with {', '.join(f'{gates.PREFIX}{k}={v}' for k, v in MOVES_BYTES.items())}")
    p = residual_add.Plan(*c.plan)
    o = resident(p.block)
    fill = min(p.grid, o.blocks_per_wave) / o.blocks_per_wave if o.blocks_per_sm else 0.0
    sms = hardware.spec("H200").sm_count
    near = "; ".join(f"{r.plan[0]} x {r.plan[1]} ept {r.plan[2]} {_gain(r):+.3f}" for r in around(c.plan, d))
    return (f"{p.text()}: not recorded on the H200; its time needs a GPU (live mode) and is never made up.\n"
            f"On the CPU: covers n = {N:,} exactly; {p.grid} blocks on {sms} SMs ({p.grid / sms:.2f} per SM), "
            f"{o.blocks_per_sm} resident per SM, wave fill {fill:.1%}.\n"
            f"Recorded around it, main less plan (ms/token, ctx {d.ctx:,}, cold): {near} -- replay one of these, "
            f"or run yours live.")


def _recorded_rep(c: Config, d: FixData) -> float:
    """Replay: the next of this arm's recorded reps. main's come from the ABBA of the registered plan (the one
    the learner is reproducing), else of the reference plan."""
    if c.plan is None and not c.extra:
        try:
            mine = config({ENV: "1"})
        except residual_add.PlanError:
            mine = None
        run = (d.run(mine) if mine else None) or d.run(Config(tuple(vars(REFERENCE).values())))
        reps = run.arm("B")
    else:
        run = d.run(c)
        if run is None:
            raise FixError(unrecorded(c, d))
        reps = run.arm("A")
    k = _served.get(c, 0)
    _served[c] = k + 1
    return reps[k % len(reps)]


def rep(arms: dict, name: str) -> float:
    """One ABBA rep of arm `name` of `arms`, ms/token: an 8-token CUDA graph of the step at ctx 131,072 (cold:
    the step's weights and caches stream from HBM every token). Live: measured now; replay: recorded."""
    c = _arm(arms, name)
    ms = DOOR.choose(live=lambda: _rep(_model(), c),  # pragma: no mutate (live only)
                     replay=lambda: _recorded_rep(c, recorded()))
    _order.append(str(name))
    return ms


@dataclass
class Compared:
    depth: int
    identical: bool
    differing: int
    elements: int
    sha_a: str
    sha_b: str
    note: str = ""

    def __str__(self) -> str:
        what = "IDENTICAL" if self.identical else f"{self.differing:,} of {self.elements:,} values differ"
        return fit(f"ctx {self.depth:>7,}: {what} (sha256 {self.sha_a[:12]} / {self.sha_b[:12]})"
                + (f" -- {self.note}" if self.note else ""))


def _recorded_cmp(a: Config, b: Config, depth: int, d: FixData) -> Compared:
    if a == b:
        s = next((x for x in d.same if x.depth == depth), None)
        if s is None:
            raise FixError(f"depth {depth:,} was not recorded; the recorded depths are {', '.join(map(str, DEPTHS))}")
        return Compared(depth, s.identical, s.differing, s.elements, s.sha_a, s.sha_b,
                        "both arms are the same configuration (recorded: main against main)")
    if b.plan is not None or b.extra:
        a, b = b, a
    x = d.cmp(a, depth) if b == Config(None) else None
    if x is None and b == Config(None) and a.plan is not None and not a.extra:
        return added_on_cpu(a, depth)
    if x is None:
        raise FixError(f"cmp of {a.text()} against {b.text()} at ctx {depth:,} needs a GPU (not recorded); the "
                       f"recording compares each recorded plan against main at ctx {' and '.join(map(str, DEPTHS))}")
    return Compared(depth, x.identical, x.differing, x.elements, x.sha_a, x.sha_b)


def added_on_cpu(a: Config, depth: int, seed: int = 7) -> Compared:
    """Replay's cmp of an unrecorded plan against main, computed for real on the CPU: the residual add -- the one
    kernel the two arms launch differently -- by each plan's index rule (residual_add.emulate) over one row of
    N float32 pairs, byte for byte. The whole step's dump at `depth` needs a GPU; the note says so."""
    rng = np.random.default_rng(seed)
    h, x = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    mine = residual_add.emulate(residual_add.Plan(*a.plan), h, x)
    main = residual_add.emulate(residual_add.main_plan(N), h, x)
    differ = int(np.count_nonzero(mine.view(np.uint32) != main.view(np.uint32)))
    return Compared(depth, differ == 0, differ, N, hashlib.sha256(mine.tobytes()).hexdigest(),
                    hashlib.sha256(main.tobytes()).hexdigest(),
                    f"not recorded: computed on the CPU, the residual add alone by both plans' index rule over "
                    f"{N:,} float32 pairs; the step's dump at ctx {depth:,} needs a GPU")


def cmp(arms: dict, depth: int, a: str = "A", b: str = "B") -> Compared:
    """Arms a and b dumped at `depth` (every layer's hidden state and KDA output, and the logits, for two
    positions) and compared byte for byte."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 < depth <= CTX:
        raise FixError(f"depth must be a context length from 1 to {CTX:,}, got {depth!r}")
    ca, cb = _arm(arms, a), _arm(arms, b)

    def live():  # pragma: no mutate block (live only)
        x = compare(_model(), ca, cb, (depth,))[0]
        return Compared(depth, x.identical, x.differing, x.elements, x.sha_a, x.sha_b)
    return DOOR.choose(live=live, replay=lambda: _recorded_cmp(ca, cb, depth, recorded()))


def table(recorded: FixData, top: int = 4, bottom: int = 3) -> str:
    """The recorded plans' ABBAs against main, by gain -- the `top` and `bottom` ones and main's own shape:
    medians, the gap and both arms' ranges (ms/token)."""
    rows = []
    for r in recorded.runs:
        a, b = r.arm("A"), r.arm("B")
        gain = statistics.median(b) - statistics.median(a)
        rows.append((gain, r, max(a) - min(a), max(b) - min(b)))
    out = [f"{'plan (grid x block, ept)':<30} {'yours':>7} {'main':>7} {'gain':>7} {'ranges A / B':>13}"]
    ranked = sorted(rows, key=lambda x: -x[0])
    for k, (gain, r, ra, rb) in enumerate(ranked):
        if top <= k < len(ranked) - bottom and r.plan != [28, 256, 1]:
            if k == top:
                out.append(f"{'...':<30}")
            continue
        what = "main's shape " if r.plan == [28, 256, 1] and not r.extra else ""
        p = (f"{what}{r.plan[0]} x {r.plan[1]}, {r.plan[2]}" if r.plan else "main") + (
            " + " + ",".join(f"{k}={v}" for k, v in r.extra) if r.extra else "")
        out.append(f"{p:<30} {statistics.median(r.arm('A')):>7.3f} {statistics.median(r.arm('B')):>7.3f} "
                   f"{gain:>+7.3f} {ra:>6.3f} / {rb:.3f}")
    return "\n".join(out) + f"\n({len(rows)} ABBAs of three pairs, each rep an 8-token graph at ctx {recorded.ctx:,}, cold)"
