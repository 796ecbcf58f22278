"""§2.1 / §2.2: accuracy against main on the decode step -- KL(main || arm) per position and top-1 agreement.

The lecture tells the widened norm's accuracy story in KL and top-1 against main: the 2x KL ratchet, the
earlier version that widened the reduction (ctx 2048 at 4.63x main's KL), §2.2's table of tok/s, top-1, KL
and % over the frontier. This door measures the same columns on the course's own step.

Both arms decode the same positions from the same build: the model is built once per context, and the only
state a step changes that a later step reads -- the KDA layers' recurrent states -- is copied before the main
run and restored before every arm (an MLA cache row at or past ctx is always written by the step before any
split reads it). A control arm, main run again, must come out byte-identical: it checks the restore.

To compare the distributions and not the trajectories, each arm is fed main's greedy tokens (teacher
forcing): otherwise one flipped argmax makes every later position a comparison of two different texts
(notebook 07 shows it happen at the second position for the fma arm). KL is computed in float64 from the fp32
logits:

    KL(p || q) = sum_i p_i (log p_i - log q_i),   p = softmax(main's logits), q = softmax(the arm's)

exactly 0 when the logits are byte-identical, and top-1 agreement is the share of positions whose argmax
agrees. A last-bit change in one logit moves KL by ~1e-15, which float64 may round to 0: the bytes are kept
beside KL per position, so "KL 0, bytes differ" stays visible -- KL is a tolerance, not a byte check.

The weights are random (launchlab.kernels.decode): the KL values say how far each arm's arithmetic moves this
model's distributions, not how a trained model's quality moves. The lecture's KL figures were measured
against its eval's reference; the ratchet compares an arm's KL there with main's (at most 2x). KL(main ||
arm) is the direct measure of the perturbation the ratchet reacts to.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from launchlab.core.width import fit_all
from launchlab.core import gates, mode, recordings
from launchlab.core.door import Door
from launchlab.kernels import decode
from launchlab.sections.s02_width import frontier
from launchlab.sections.s06_one_binary import onebinary

TOKENS = 32
DEPTHS = (onebinary.SHORT_CTX, onebinary.CTX)        # the lecture's ctx 2048, and the eval's long context
RATCHET = 2.0                                        # an arm's KL may be at most 2x main's (lecture §2.1)
# Each arm: main's gates with these changed. "main again" is the control (byte-identical if the restore works).
ARMS = (("main again", {}),
        ("widened apply", {"RMS_WIDE": "1"}),
        ("widened reduction", {"RMS_WIDE": "1", "RMS_REDUCE": "wide"}),
        ("fma elision", {"KDA_ELIDE": "fma"}),
        ("MLA split, derived floor", {"MLA_FLOOR": "derived"}),
        ("MLA split + skip", {"MLA_FLOOR": "derived", "MLA_SKIP": "on"}),
        ("PDL off", {"PDL": "0"}),
        ("fixed preset", None))                      # None: gates.preset("fixed")


def log_softmax(logits) -> np.ndarray:
    z = np.asarray(logits, np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def kl(p_logits, q_logits) -> np.ndarray:
    """KL(p || q) per row (position), in nats, from two arrays of logits (positions x vocab)."""
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return np.sum(np.exp(lp) * (lp - lq), axis=-1)


@dataclass
class Agreement:
    positions: list[int]
    kl: list[float]             # per position, nats
    top1: list[bool]            # per position: the arms' argmax agree
    identical: list[bool]       # per position: the logits' bytes agree

    @property
    def mean_kl(self) -> float:
        return float(np.mean(self.kl))

    @property
    def top1_rate(self) -> float:
        return float(np.mean(self.top1))


def agreement(positions, main_logits, arm_logits) -> Agreement:
    a, b = np.asarray(main_logits, np.float32), np.asarray(arm_logits, np.float32)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"logits must be (positions, vocab) in both arms, got {a.shape} and {b.shape}")
    ident = [bool(np.array_equal(x.view(np.uint32), y.view(np.uint32))) for x, y in zip(a, b)]
    k = kl(a, b)
    k = np.where(ident, 0.0, np.maximum(k, 0.0))          # identical bytes: exactly 0, not rounding noise
    return Agreement(list(positions), [float(x) for x in k], [bool(x) for x in a.argmax(1) == b.argmax(1)], ident)


# ------------------------------------------------------------------ on the decode step
@dataclass
class ArmAccuracy:
    """One arm against main at one context, over the same teacher-forced positions."""
    arm: str
    gates: dict                  # the arm's gate values that differ from main's
    ctx: int
    kl: list[float]              # per position, nats
    top1: list[bool]
    identical: list[bool]        # per position: the logits' bytes agree

    @property
    def mean_kl(self) -> float:
        return float(np.mean(self.kl))

    @property
    def max_kl(self) -> float:
        return float(np.max(self.kl))

    @property
    def top1_rate(self) -> float:
        return float(np.mean(self.top1))

    @property
    def bytes_identical(self) -> bool:
        return all(self.identical)


@dataclass
class Speed:
    """An arm's tok/s against main's at the eval context, ABBA (A = the arm), as §2.2's table has it."""
    arm: str
    abba: dict                   # onebinary.GateRun.to_dict()

    @property
    def run(self) -> "onebinary.GateRun":
        return onebinary.GateRun.from_dict(self.abba)

    @property
    def tok_s(self) -> float:
        return 1e3 / self.run.fixed_ms

    @property
    def main_tok_s(self) -> float:
        return 1e3 / self.run.main_ms

    @property
    def over_frontier_pct(self) -> float:
        r = self.run
        return onebinary.gain_pct(r.main_ms, r.fixed_ms)


@dataclass
class AccuracyData:
    layers: int
    tokens: int
    arms: list[ArmAccuracy]
    speeds: list[Speed]
    speed_ctx: int
    source: str = field(default="", metadata={recordings.RECORDED: False})

    def arm(self, name: str, ctx: int) -> ArmAccuracy:
        return next(a for a in self.arms if a.arm == name and a.ctx == ctx)

    def speed(self, name: str) -> Speed:
        return next(s for s in self.speeds if s.arm == name)

    @property
    def depths(self) -> list[int]:
        return sorted({a.ctx for a in self.arms})


def arm_gates(name: str) -> dict:
    """The arm's full gate setting: main's, with the arm's changes."""
    change = dict(ARMS)[name]
    return gates.preset("fixed") if change is None else dict(gates.preset("main"), **change)


def _changes(arm: dict) -> dict:
    main = gates.preset("main")
    return {k: v for k, v in arm.items() if main[k] != v}


def _decode(model, positions, tokens_in=None) -> tuple[np.ndarray, list[int]]:
    """Logits per position (positions x vocab); greedy, or fed `tokens_in` (teacher forcing)."""
    import cupy as cp
    logits, fed = [], []
    for j, p in enumerate(positions):
        if tokens_in is not None:
            model.buf["token"][0] = tokens_in[j]
        fed.append(int(model.buf["token"][0]))
        model.step(p)
        logits.append(cp.asnumpy(model.buf["logits"]))
    return np.stack(logits), fed


def at_depth(ctx: int, layers: int = decode.FULL_LAYERS, tokens: int = TOKENS, arms=None,
             speed: bool = False, pairs: int = 3, reps: int = 3,
             speed_tokens: int = onebinary.EVAL_TOKENS) -> tuple[list[ArmAccuracy], list[Speed]]:
    mode.require_live("KL against main on the decode step")
    import cupy as cp
    names = [n for n, _ in ARMS] if arms is None else list(arms)
    model = decode.build(decode.Config(layers=layers), ctx=ctx, extra=max(tokens, onebinary.EVAL_TOKENS) + 1)
    positions = list(range(ctx, ctx + tokens))
    saved = model.save()                      # every arm decodes from the state the build left
    main = gates.preset("main")
    with gates.setting(**main):
        ref, fed = _decode(model, positions)
    out = []
    for name in names:
        model.restore(saved)
        arm = arm_gates(name)
        with gates.setting(**arm):
            got, _ = _decode(model, positions, fed)
        ag = agreement(positions, ref, got)
        out.append(ArmAccuracy(name, _changes(arm), ctx, ag.kl, ag.top1, ag.identical))
    speeds = []
    if speed:
        for name in names:
            if name in ("main again",):
                continue
            ab = onebinary.abba(model, arm_gates(name), main, speed_tokens, pairs, reps, (name, "main"))
            speeds.append(Speed(name, onebinary.GateRun(name, "arm", "main", ab).to_dict()))
    del model
    cp.get_default_memory_pool().free_all_blocks()
    return out, speeds


def measure(layers: int = decode.FULL_LAYERS, tokens: int = TOKENS, pairs: int = 3, reps: int = 3,
            speed_tokens: int = onebinary.EVAL_TOKENS) -> AccuracyData:
    arms, speeds = [], []
    for ctx in DEPTHS:
        a, s = at_depth(ctx, layers, tokens, speed=(ctx == onebinary.CTX), pairs=pairs, reps=reps,
                        speed_tokens=speed_tokens)
        arms += a
        speeds += s
    return AccuracyData(layers, tokens, arms, speeds, onebinary.CTX, source="live")


_parse, _dump = recordings.codec(AccuracyData, "accuracy", "accuracy")

DOOR: Door[AccuracyData] = Door("KL and top-1 against main", "accuracy",
                                ("decode_ops", "rms_norm", "kda_decode", "mla_decode"), measure, _parse, _dump,
                                quick={"tokens": 4, "pairs": 2, "reps": 2, "speed_tokens": 4})
data = DOOR.data
recorded = DOOR.recorded


# ------------------------------------------------------------------ what the notebooks print
def table(d: AccuracyData) -> str:
    out = [f"{'arm (main + ...)':<26} {'ctx':>7} {'mean KL (nats)':>14} {'max KL':>9} {'top-1':>6} "
           f"{'logits bytes':>20}"]
    for a in d.arms:
        ident = sum(a.identical)
        b = "identical" if a.bytes_identical else f"{len(a.identical) - ident} of {len(a.identical)} differ"
        out.append(f"{a.arm:<26} {a.ctx:>7,} {a.mean_kl:>14.3e} {a.max_kl:>9.2e} {a.top1_rate:>6.3f} {b:>20}")
    out.append(f"{d.tokens} positions from ctx, teacher-forced with main's greedy tokens; {d.layers} layers; "
               "KL in float64 from the fp32 logits (vocab shard 20,480)")
    return fit_all("\n".join(out))


def frontier_rows(d: AccuracyData, ctx: int) -> list[tuple]:
    """§2.2's columns for each arm: (arm, tok/s, main tok/s, % over the frontier, scores at 2 %, top-1, KL)."""
    rows = []
    for s in d.speeds:
        a = d.arm(s.arm, ctx)
        rows.append((s.arm, s.tok_s, s.main_tok_s, s.over_frontier_pct, s.over_frontier_pct > 100 * frontier.GATE,
                     a.top1_rate, a.mean_kl))
    return rows


LECTURE_RATIO = 4.63              # lecture §2.1: the version that widened the reduction, ctx 2048, x main's KL


def ratchet(d: AccuracyData, arm: str = "widened reduction") -> str:
    """How large the arm's KL(main || arm) is against the lecture's ratchet: an arm may have at most 2x main's KL
    against the eval's reference, so with main at the lecture's KLs the room above main is 1x main's KL. Read as
    if KLs added (they do not exactly: a rough scale, not a verdict)."""
    out = [f"the lecture's ratchet: an arm's KL <= {RATCHET:g}x main's; the version that widened the reduction "
           f"measured {LECTURE_RATIO}x at ctx 2048"]
    lo, hi = min(k for _, k in frontier.ROUND_ACCURACY), max(k for _, k in frontier.ROUND_ACCURACY)
    for ctx in d.depths:
        k = d.arm(arm, ctx).mean_kl
        out.append(f"{arm} at ctx {ctx:,}: KL(main || arm) = {k:.2e} = {k / hi:.0%} to {k / lo:.0%} of the room "
                   f"({RATCHET - 1:g}x main's KL) if main's own KL were the lecture's {lo:g}-{hi:g}")
    return fit_all("\n".join(out))


def frontier_table(d: AccuracyData, ctx: int) -> str:
    """§2.2's table twice: the lecture's PR #71 rounds, then the course's arms against main on the step."""
    out = [f"{'':<34} {'tok/s':>7} {'top-1':>6} {'KL':>9} {'% over frontier':>16} {'tier':>11}"]
    for r, (top1, kl_) in zip(frontier.lecture_rounds(), frontier.ROUND_ACCURACY):
        out.append(f"{'lecture #71, round ' + str(r.round):<34} {r.branch_tok_s:>7.2f} {top1:>6.3f} {kl_:>9.4f} "
                   f"{100 * r.over_frontier:>+15.1f}% {'eval:none' if not r.scores else 'scores':>11}")
    for arm, tok_s, main_tok_s, over, scores, top1, kl_ in frontier_rows(d, ctx):
        out.append(f"{'course: ' + arm:<34} {tok_s:>7.2f} {top1:>6.3f} {kl_:>9.4f} {over:>+15.1f}% "
                   f"{'clears 2%' if scores else 'none':>11}")
    s = d.speeds[0].run
    out.append(f"course rows: tok/s at ctx {d.speed_ctx:,} (ABBA against main, {1e3 / s.main_ms:.1f} tok/s, each arm in "
               f"its own run); top-1 and KL(main || arm) over {d.tokens} teacher-forced positions at ctx {ctx:,}. The "
               "lecture's KL is against its eval's reference, ours against main: the same column, not the same "
               "reference")
    return fit_all("\n".join(out))


def headline(d: AccuracyData) -> dict:
    short = onebinary.SHORT_CTX
    return {"kl_wide_apply_vs_main": d.arm("widened apply", short).mean_kl,
            "kl_wide_reduce_vs_main": d.arm("widened reduction", short).mean_kl,
            "kl_wide_reduce_vs_main_long": d.arm("widened reduction", onebinary.CTX).mean_kl,
            "top1_wide_reduce_vs_main": d.arm("widened reduction", short).top1_rate,
            "wide_apply_logits_identical": all(d.arm("widened apply", c).bytes_identical for c in d.depths)}
