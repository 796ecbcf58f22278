"""§2 / §6: the decode chain with and without programmatic dependent launch, and a kernel that opts out.

The lecture's widened norm "stays on the existing launch mechanism": its launches keep the programmatic-
dependent-launch path the rest of the decode chain uses, because an optimization that quietly opts out of the
launch infrastructure gives back what it gains. This door measures each part of that sentence on the H200:

  norm chains   §2's graph of 327 norms of one 7,168-wide row (hot L2: 57 KB, resident), launched on the chain's
                path with the attribute (PDL) and without (plain), ABBA, for main's 128-thread kernel and the
                widened one. Both arms go through cuLaunchKernelEx; the attribute is the only difference.
  timelines     a shorter chain of the widened norm, each launch stamping %globaltimer when its block entered,
                when its wait returned and when it finished (kernels/rms_norm.cu): plain, PDL, and PDL with one
                launch in the middle opted out. The gap between one launch finishing and the next entering is
                the launch overhead PDL hides; with PDL it is negative (the successor was already resident).
  the step      the full-depth decode step at the eval context under the fixed preset, ABBA: PDL on against
                off (what the path is worth per token), PDL against the norm opted out (what the opt-out gives
                back), and -- in the same run -- the widened norm against the 128-thread one (what the
                optimization itself wins).
  bytes         the step's dumps with PDL on and off, compared with cmp (every layer, two depths).
"""
from __future__ import annotations

import textwrap

import statistics
from dataclasses import dataclass, field

import numpy as np

from launchlab.core.width import fit_all
from launchlab.core import gates, mode, pdl, recordings, slices, timing
from launchlab.core.door import Door
from launchlab.kernels import decode, rms_norm
from launchlab.sections.s06_one_binary import onebinary
from launchlab.sections.s07_bit_identity import identity

N = 7168
LAUNCHES = rms_norm.NORMS_PER_TOKEN
NORM_ARMS = (("original", 128), ("wide", 1024))          # main's kernel, and the widened one as the step runs it
TIMELINE_LAUNCHES = 24
OPT_OUT_AT = 12                                          # the launch that opts out in the third timeline
CTX = onebinary.CTX
CMP_DEPTHS = (onebinary.SHORT_CTX, onebinary.CTX)


@dataclass
class NormChain:
    """ABBA of one norm kernel's 327-launch graph: A = PDL, B = plain; each rep µs per launch (hot)."""
    arm: str
    expr: str
    block: int
    launches: int
    order: list[str]
    reps_us: list[float]

    def arm_reps(self, which: str) -> list[float]:
        return [t for o, t in zip(self.order, self.reps_us) if o == which]

    @property
    def pdl_us(self) -> float:
        return statistics.median(self.arm_reps("A"))

    @property
    def plain_us(self) -> float:
        return statistics.median(self.arm_reps("B"))

    @property
    def gain_pct(self) -> float:
        """How much faster the chain runs with PDL: launches per second, plain -> PDL."""
        return 100 * (self.plain_us / self.pdl_us - 1)

    @property
    def saved_pct(self) -> float:
        """The share of each launch's time PDL removes."""
        return 100 * (1 - self.pdl_us / self.plain_us)

    @property
    def spread_us(self) -> float:
        return max(max(self.arm_reps(w)) - min(self.arm_reps(w)) for w in "AB")


@dataclass
class Timeline:
    """One graph replay of a chain of norms: per launch, block 0's %globaltimer readings in ns from the first
    launch's entry."""
    name: str
    entered: list[int]
    waited: list[int]
    finished: list[int]
    opted_out: int | None = None

    @property
    def gaps_ns(self) -> list[int]:
        """Launch i + 1 entered minus launch i finished: > 0 idle between them, < 0 already resident."""
        return [b - a for a, b in zip(self.finished, self.entered[1:])]

    @property
    def waits_ns(self) -> list[int]:
        return [w - e for e, w in zip(self.entered, self.waited)]

    @property
    def per_launch_ns(self) -> float:
        """Finished-to-finished, the chain's pace (median)."""
        return statistics.median(b - a for a, b in zip(self.finished, self.finished[1:]))

    def typical_gap_ns(self) -> float:
        """The median gap, leaving out the two gaps around an opted-out launch."""
        skip = {self.opted_out - 1, self.opted_out} if self.opted_out is not None else set()
        return statistics.median(g for i, g in enumerate(self.gaps_ns) if i not in skip)


@dataclass
class StepCase:
    """cmp of the step's dumps, two arms from identical builds (identity.compare), every layer."""
    name: str
    ctx: int
    identical: bool
    differing: int
    elements: int
    sha_a: str
    sha_b: str


@dataclass
class PDLData:
    n: int
    norm: list[NormChain]
    timelines: list[Timeline]
    ctx: int
    layers: int
    step: dict                   # onebinary.GateRun.to_dict(): A = fixed (PDL on), B = PDL=0
    opt_out: dict                # A = fixed, B = PDL_OPT_OUT=rms_norm
    norm_win: dict               # A = fixed, B = RMS_WIDE=0 (the widened norm's own win, the same run)
    cmp: list[StepCase]
    source: str = field(default="", metadata={recordings.RECORDED: False})

    def chain(self, arm: str) -> NormChain:
        return next(c for c in self.norm if c.arm == arm)

    def timeline(self, name: str) -> Timeline:
        return next(t for t in self.timelines if t.name == name)

    def run(self, which: str) -> "onebinary.GateRun":
        return onebinary.GateRun.from_dict({"step": self.step, "opt_out": self.opt_out,
                                            "norm_win": self.norm_win}[which])

    @property
    def step_gain_pct(self) -> float:
        r = self.run("step")
        return onebinary.gain_pct(r.main_ms, r.fixed_ms)

    @property
    def opt_out_cost_us(self) -> float:
        return 1e3 * self.run("opt_out").cost_ms

    @property
    def norm_win_us(self) -> float:
        return 1e3 * self.run("norm_win").cost_ms


# ------------------------------------------------------------------ measuring
def _norm_graph(bench: "rms_norm.Bench", arm: str, block: int, pdl_on: bool, reps: int) -> timing.Timing:
    with gates.setting(PDL="1" if pdl_on else "0", PDL_OPT_OUT="none"), pdl.chain():
        return timing.graph(lambda: bench.run(arm, block), launches=LAUNCHES, reps=reps,
                            label=f"{arm} block {block} {'PDL' if pdl_on else 'plain'} hot")


def norm_chain(arm: str, block: int, pairs: int = 3, reps: int = 10) -> NormChain:
    mode.require_live("timing the norm chain")
    b = rms_norm.Bench(N)
    expr = rms_norm.plan(N, True, block, arm == "wide").expr
    ab = timing.abba(lambda: _norm_graph(b, arm, block, True, reps), lambda: _norm_graph(b, arm, block, False, reps),
                     pairs, ("PDL", "plain"))
    return NormChain(arm, expr, block, LAUNCHES, ab.order, [t.median for t in ab.results])


def timeline(name: str, pdl_on: bool, opted_out: int | None = None, launches: int = TIMELINE_LAUNCHES,
             block: int = 1024) -> Timeline:
    """A graph of `launches` widened norms, each stamping its own three slots; the stamps of its last replay."""
    mode.require_live("a timeline of the norm chain")
    import cupy as cp
    b = rms_norm.Bench(N)
    stamps = cp.zeros((launches, 3), dtype=cp.uint64)
    it = iter(range(launches))

    def one():
        i = next(it)
        force = False if i == opted_out else None
        rms_norm.rms_norm(b.x, b.w, b.y, rms_norm.EPS, N, block=block, wide=True, stamps=stamps[i], pdl=force)

    with gates.setting(PDL="1" if pdl_on else "0", PDL_OPT_OUT="none"), pdl.chain():
        rms_norm.rms_norm(b.x, b.w, b.y, rms_norm.EPS, N, block=block, wide=True)      # loaded outside the capture
        cp.cuda.Device().synchronize()
        stream = slices.stream()
        g = timing.capture(one, launches, stream)
    for _ in range(3):
        g.launch(stream)
    stream.synchronize()
    s = cp.asnumpy(stamps).astype(np.int64)
    t0 = int(s[0, 0])
    return Timeline(name, (s[:, 0] - t0).tolist(), (s[:, 1] - t0).tolist(), (s[:, 2] - t0).tolist(), opted_out)


def measure(layers: int = decode.FULL_LAYERS, ctx: int = CTX, pairs: int = 3, reps: int = 3) -> PDLData:
    mode.require_live("measuring the decode chain with and without PDL")
    import cupy as cp
    norm = [norm_chain(arm, block) for arm, block in NORM_ARMS]
    tls = [timeline("plain", False), timeline("PDL", True), timeline(f"PDL, launch {OPT_OUT_AT} opted out", True, OPT_OUT_AT)]
    fixed = gates.preset("fixed")
    model = decode.build(decode.Config(layers=layers), ctx=ctx, extra=onebinary.EVAL_TOKENS + 1)

    def run(gate: str, value: str, label: str) -> dict:
        ab = onebinary.abba(model, fixed, dict(fixed, **{gate: value}), onebinary.EVAL_TOKENS, pairs, reps,
                            ("fixed", label))
        return onebinary.GateRun(gate, fixed[gate], value, ab).to_dict()

    step = run("PDL", "0", "PDL=0")
    opt = run("PDL_OPT_OUT", "rms_norm", "PDL_OPT_OUT=rms_norm")
    win = run("RMS_WIDE", "0", "RMS_WIDE=0")
    del model
    cp.get_default_memory_pool().free_all_blocks()
    cfg = decode.Config(layers=layers)
    cases = []
    for c in CMP_DEPTHS:
        r = identity.compare("PDL 1 vs 0", c, dict(fixed, PDL="1"), dict(fixed, PDL="0"), cfg, 2)
        cases.append(StepCase(r.name, c, r.identical, r.differing, r.elements, r.sha_a, r.sha_b))
    return PDLData(N, norm, tls, ctx, layers, step, opt, win, cases, source="live")


_parse, _dump = recordings.codec(PDLData, "pdl", "pdl")

DOOR: Door[PDLData] = Door("the decode chain with and without PDL", "pdl",
                           ("decode_ops", "rms_norm", "kda_decode", "mla_decode"), measure, _parse, _dump,
                           quick={"pairs": 2, "reps": 2})
data = DOOR.data
recorded = DOOR.recorded


# ------------------------------------------------------------------ what the notebooks print
def norm_table(d: PDLData) -> str:
    out = [f"{'kernel (n = 7,168, hot L2)':<28} {'block':>5} {'plain µs/launch':>15} {'PDL µs/launch':>13} "
           f"{'faster':>7} {'time saved':>10} {'spread':>7}"]
    for c in d.norm:
        out.append(f"{c.expr:<28} {c.block:>5} {c.plain_us:>15.3f} {c.pdl_us:>13.3f} {c.gain_pct:>6.1f}% "
                   f"{c.saved_pct:>9.1f}% {c.spread_us:>7.3f}")
    out.append(f"{d.norm[0].launches} launches in one CUDA graph, ABBA over {len(d.norm[0].order) // 2} pairs; each rep "
               "is the median of 10 replays; spread = the wider arm's max - min over its reps (µs)")
    return fit_all("\n".join(out))


def timeline_table(d: PDLData) -> str:
    out = [f"{'chain':<26} {'per launch':>10} {'typical gap':>11} {'gap before / after the opted-out launch':>40}"]
    for t in d.timelines:
        around = (f"{t.gaps_ns[t.opted_out - 1] / 1e3:+.2f} / {t.gaps_ns[t.opted_out] / 1e3:+.2f} µs"
                  if t.opted_out is not None else "-")
        out.append(f"{t.name:<26} {t.per_launch_ns / 1e3:>8.2f}µs {t.typical_gap_ns() / 1e3:>+9.2f}µs {around:>40}")
    out.append("gap = the next launch's block entered minus this launch's block finished (%globaltimer, ns); "
               "negative: the next one was already resident, waiting")
    return fit_all("\n".join(out))


def step_table(d: PDLData) -> str:
    rows = [("PDL on (A) vs off (B)", d.run("step")), ("on path (A) vs norm opted out (B)", d.run("opt_out")),
            ("widened norm (A) vs 128-thread (B)", d.run("norm_win"))]
    out = [f"{'fixed preset, ctx ' + format(d.ctx, ','):<36} {'A ms/token':>10} {'B ms/token':>10} {'B - A':>10} "
           f"{'spread':>7}"]
    for name, r in rows:
        reps = " ".join(f"{o}{t.median / 1e3:.3f}" for o, t in zip(r.abba.order, r.abba.results))
        out.append(f"{name:<36} {r.fixed_ms:>10.3f} {r.main_ms:>10.3f} {1e3 * r.cost_ms:>+8.1f}µs "
                   f"{1e3 * r.spread_ms:>5.1f}µs")
        out.append(f"{'':<4}reps in order, ms/token: {reps}")
    out += textwrap.wrap(f"each rep: the median of {rows[0][1].abba.results[0].n} replays of an "
                         f"{onebinary.EVAL_TOKENS}-token graph, cold weights; spread = the wider arm's max - min over "
                         "its reps", 108)
    return "\n".join(out)


def cmp_table(d: PDLData) -> str:
    out = [f"{'arms':<12} {'ctx':>8}  cmp"]
    for c in d.cmp:
        v = "IDENTICAL" if c.identical else f"{c.differing:,} of {c.elements:,} differ"
        out.append(f"{c.name:<12} {c.ctx:>8,}  {v}  (sha256 {c.sha_a[:12]} / {c.sha_b[:12]})")
    return "\n".join(out)


def verdict(d: PDLData) -> str:
    """What the path is worth on the step, and what the norms opting out give back against their own win."""
    r = d.run("step")
    return fit_all("\n".join([
        f"PDL on the whole step: {d.step_gain_pct:+.1f} % tok/s ({1e3 * r.cost_ms:.0f} µs per token, "
        f"{abs(r.cost_ms) / r.spread_ms:.0f}x the spread of the reps)",
        f"the 327 norms opting out give back {d.opt_out_cost_us:.0f} µs per token "
        f"({d.opt_out_cost_us / (1e3 * d.run('opt_out').spread_ms):.0f}x the spread): "
        f"{d.opt_out_cost_us / d.norm_win_us:.0%} of the {d.norm_win_us:.0f} µs per token their widening wins"]))


def headline_02(d: PDLData) -> dict:
    return {"rms_pdl_gain_pct": d.chain("wide").gain_pct, "rms_pdl_gain_pct_main_kernel": d.chain("original").gain_pct}


def headline_06(d: PDLData) -> dict:
    return {"pdl_step_gain_pct": d.step_gain_pct, "pdl_opt_out_cost_us_per_token": d.opt_out_cost_us,
            "rms_wide_win_us_per_token": d.norm_win_us,
            "pdl_arms_identical": all(c.identical for c in d.cmp)}
