"""Exercises: the learner answers in a cell, the next cell checks the answer and explains it.

Convention (the lab and the self-check build on it):

    # cell tagged `exercise`                      # cell tagged `check`
    my_blocks_per_wave = None   # your answer     exercises.check("01.blocks_per_wave", my_blocks_per_wave)

`check(key, answer, *context)` prints one `Feedback` (`grade()` returns it, for the lab's scoring): "not answered yet" for None (so a blank notebook runs
clean under nbval), "not a number" for the wrong kind of answer, or right/wrong with the reason -- computed
from the same data the notebook shows (`context`: the section's recorded or live result), never a traceback.
The answer it expects is computed, not typed in: in live mode a predict-then-measure exercise is scored
against what the GPU measured a moment ago.

Every exercise is registered here by key ("<notebook>.<name>"); tests/test_exercises.py checks that each has
a right, a wrong and a blank answer handled, and that every notebook cell tagged `check` names one.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from launchlab.core import diagnosis, hardware, loader, occupancy, paths
from launchlab.kernels import kda_decode, splits
from launchlab.sections.s01_arithmetic import achieved, bandwidth
from launchlab.sections.s02_width import frontier, rmsnorm
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s04_derive import derive
from launchlab.sections.s05_sharding import audit
from launchlab.sections.s07_bit_identity import fmatrap
from launchlab.sections.s08_reshape import reassociation


@dataclass(frozen=True)
class Exercise:
    key: str
    prompt: str                                   # what to answer, with its unit
    expected: Callable[..., object]               # (*context) -> the right answer
    why: Callable[..., str]                       # (*context) -> the reasoning, shown with every verdict
    kind: str = "number"                          # "number", "choice" or "written"
    rel_tol: float = 0.0                          # numbers: accepted relative error
    abs_tol: float = 0.0                          # numbers: accepted absolute error (e.g. percentage points)
    choices: tuple[str, ...] = ()
    points: tuple = ()                            # written: ((label, (pattern, ...)), ...) -- the key points


@dataclass
class Feedback:
    key: str
    status: str                                   # "blank", "invalid", "right" or "wrong"
    text: str
    expected: object = field(default=None, repr=False)

    @property
    def correct(self) -> bool:
        return self.status == "right"

    def __str__(self) -> str:
        return self.text


EXERCISES: dict[str, Exercise] = {}


def register(e: Exercise) -> Exercise:
    if e.key in EXERCISES:
        raise ValueError(f"exercise {e.key} registered twice")
    if e.kind not in ("number", "choice", "written") or (e.kind == "choice") != bool(e.choices):
        raise ValueError(f"{e.key}: a choice exercise needs choices, a number or written one none")
    if (e.kind == "written") != bool(e.points):
        raise ValueError(f"{e.key}: a written exercise needs key points, the others none")
    EXERCISES[e.key] = e
    return e


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def grade(key: str, answer, *context) -> Feedback:
    """The verdict on one answer, without printing it."""
    e = EXERCISES.get(key)
    if e is None:
        return Feedback(key, "invalid", f"[{key}] no such exercise (known: {', '.join(sorted(EXERCISES))})")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Feedback(key, "blank", f"[{key}] not answered yet: {e.prompt}. Write your answer in the cell above "
                                      f"and run both cells again.")
    want = e.expected(*context)
    if e.kind == "written":
        if not isinstance(answer, str):
            return Feedback(key, "invalid", f"[{key}] write the answer as text (a string in quotes): {e.prompt}.",
                            want)
        hit, missed = covered(answer, e.points)
        ok = not missed
        head = (f"[{key}] all {len(hit)} key points covered" if ok else
                f"[{key}] {len(hit)} of {len(e.points)} key points covered; missing: " + "; ".join(missed))
        if hit and not ok:
            head += "\n  covered: " + "; ".join(hit)
        return Feedback(key, "right" if ok else "wrong",
                        f"{head}.\n  The model answer: {want}\n  Why: {e.why(*context)}", want)
    if e.kind == "number":
        if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
            return Feedback(key, "invalid", f"[{key}] {answer!r} is not a number: {e.prompt}.", want)
        tol = max(e.abs_tol, e.rel_tol * abs(float(want)))
        ok = abs(float(answer) - float(want)) <= tol
        off = "" if float(want) == 0 else f" ({float(answer) / float(want):.2f}x the answer)"
        head = (f"[{key}] right: {_fmt(answer)}" if ok else
                f"[{key}] not quite: you wrote {_fmt(answer)}, the answer is {_fmt(want)}{off}")
        if tol and ok:
            head += f" (the answer is {_fmt(want)}; accepted within {_fmt(tol)})"
    else:
        a = str(answer).strip().lower()
        if a not in e.choices:
            return Feedback(key, "invalid", f"[{key}] {answer!r} is not one of {', '.join(map(repr, e.choices))}.",
                            want)
        ok = a == want
        head = f"[{key}] right: {a!r}" if ok else f"[{key}] not quite: you chose {a!r}, the answer is {want!r}"
    return Feedback(key, "right" if ok else "wrong", f"{head}.\n  Why: {e.why(*context)}", want)


def covered(answer: str, points) -> tuple[list[str], list[str]]:
    """Which key points a written answer covers: a point counts when any of its patterns occurs (regular
    expressions, case-insensitive). Returns (covered labels, missing labels)."""
    import re
    hit, missed = [], []
    for label, patterns in points:
        (hit if any(re.search(p, answer, re.I) for p in patterns) else missed).append(label)
    return hit, missed


def check(key: str, answer, *context) -> None:
    """Grade one answer and print the feedback: the `check` cell's whole output (grade() returns it instead)."""
    print(grade(key, answer, *context).text)


# ------------------------------------------------------------------ notebook 01
def _stream_occ():
    regs, smem = loader.resources("stream_read", "stream_read<4, 4>")
    return occupancy.occupancy(256, regs, smem)


register(Exercise(
    "01.blocks_per_wave", "how many blocks of 256 threads make one full wave of stream_read<4, 4> on the H200",
    lambda: _stream_occ().blocks_per_wave,
    lambda: (lambda o: f"stream_read<4, 4> uses {o.regs} registers per thread, so a block of 256 needs "
                       f"{o.regs_per_block:,} of an SM's 65,536: {o.limits['registers']} blocks by registers, "
                       f"{o.limits['warps']} by warps (64 warps / 8 per block) -> {o.blocks_per_sm} per SM, x 132 "
                       f"SMs = {o.blocks_per_wave} blocks. One more block starts a second wave.")(_stream_occ())))

register(Exercise(
    "01.achieved_grid264", "predict the achieved occupancy (percent) of the streaming read at grid 264, block 256",
    lambda d: d.case(achieved.stream_name(264)).achieved_pct,
    lambda d: (lambda c: f"264 blocks on 132 SMs is 2 per SM, 8 warps each: 2 x 8 / 64 = 25 % of the warp slots. "
                         f"The calculator allows {c.blocks_per_sm} per SM ({c.theoretical_pct:.0f} %), but the grid "
                         f"only supplies 2. The timeline measured {c.achieved_pct:.1f} %"
                         + (f", ncu {r.achieved_pct:.1f} %." if (r := d.ncu_for(c.name)) else "."))(
        d.case(achieved.stream_name(264))),
    abs_tol=5.0))


# ------------------------------------------------------------------ notebook 02
def _reduction_loads(rec) -> int:
    return max(rec.in_flight.arm("original", "auto").loop_loads[:2])


register(Exercise(
    "02.inflight_reduction", "bytes of x that one trip of the original kernel's reduction loop has in flight "
                             "across its 128 threads",
    lambda rec: 128 * _reduction_loads(rec) * 4,
    lambda rec: f"the SASS shows {_reduction_loads(rec)} loads of x per trip of the unrolled reduction loop: 128 "
                f"threads x {_reduction_loads(rec)} loads x 4 B = {128 * _reduction_loads(rec) * 4:,} B -- not the "
                f"512 B of one load per thread that the lecture's arithmetic assumes."))


def _chain_speedup(rec) -> float:
    f = rec.in_flight
    return f.arm("original", "1").cold.median / f.arm("wide", "1").cold.median


register(Exercise(
    "02.chain_widening", "with one load in flight per thread (LAUNCHLAB_RMS_UNROLL=1), what does widening the "
                         "apply buy at 7,168, cold: 'about 32x', 'about 2x' or 'nothing'",
    lambda rec: "about 32x" if _chain_speedup(rec) > 10 else ("about 2x" if _chain_speedup(rec) > 1.3 else "nothing"),
    lambda rec: f"measured {_chain_speedup(rec):.2f}x. The apply's bytes in flight do grow ~32x, but the reduction "
                f"stays on 128 threads (its width is part of its numerics) and is a chain of 56 dependent loads "
                f"in both arms -- now most of the time. Amdahl, inside one kernel.",
    kind="choice", choices=("about 32x", "about 2x", "nothing")))


register(Exercise(
    "02.kl_wide_apply", "the widened apply's KL(main || arm) on the decode step, in nats",
    lambda acc: acc.arm("widened apply", 2048).mean_kl,
    lambda acc: f"exactly {acc.arm('widened apply', 2048).mean_kl:g}: its logits are byte-identical to main's at every "
                f"position ({sum(acc.arm('widened apply', 2048).identical)} of {acc.tokens}) and at both depths, and "
                f"KL of identical distributions is 0 -- not a small number, none at all. 'About 1e-12' would mean the "
                f"bytes moved; the widened reduction, whose bytes do move, reads "
                f"{acc.arm('widened reduction', 2048).mean_kl:.1e}.",
    abs_tol=0.0))


# ------------------------------------------------------------------ notebook 03
register(Exercise(
    "03.floor_main", "main's floor in microseconds: its bytes per launch over the copy ceiling",
    lambda d, ceiling_tbs: d.main.bytes / (ceiling_tbs * 1e12) * 1e6,
    lambda d, ceiling_tbs: f"{d.main.bytes:,} B / {ceiling_tbs:.2f} TB/s = "
                           f"{d.main.bytes / (ceiling_tbs * 1e12) * 1e6:.3f} us: four trips of the 768 KiB state "
                           f"(read, stage, re-read, write) plus the per-head vectors, at the rate a copy gets.",
    rel_tol=0.03))

_VERDICT_CASE = dict(bytes_moved=8.0e6, reps=[40.0 + 0.1 * ((7 * i) % 10) for i in range(20)], tbs=4.0,
                     geometry=diagnosis.Geometry(24, 132, 8))


def _verdict():
    c = _VERDICT_CASE
    return diagnosis.diagnose(c["bytes_moved"], c["reps"], c["tbs"], geometry=c["geometry"])


register(Exercise(
    "03.verdict", "a kernel moves 8 MB in a median 40.4 us (20 reps within 1 us of each other) on a 4 TB/s "
                  "device, with 24 blocks on 132 SMs: 'starvation', 'contention', 'bandwidth-bound' or "
                  "'arithmetic-bound'",
    lambda: _verdict().verdict,
    lambda: "; ".join(_verdict().reasons) + ".",
    kind="choice", choices=("starvation", "contention", "bandwidth-bound", "arithmetic-bound")))

register(Exercise(
    "03.tiles_speedup", "predict how many times faster main's kernel gets (cold) when BV = 32 takes its grid from "
                        "12 to 48 blocks, with the bytes unchanged",
    lambda d: d.main.cold.median / d.rung("walk", kda_decode.BV_TILED, "store").cold.median,
    lambda d: (lambda t: f"measured {d.main.cold.median:.1f} -> {t:.1f} us = {d.main.cold.median / t:.2f}x. Each "
                         f"warp walks 8 columns instead of 32, so its chain is 4x shorter; what every block still "
                         f"does once (load q, k, g, take exp(g), launch) keeps it under 4x.")(
        d.rung("walk", kda_decode.BV_TILED, "store").cold.median),
    rel_tol=0.2))


# ------------------------------------------------------------------ notebook 05
register(Exercise(
    "05.grid_tp4", "how many blocks main's KDA grid has on one rank at tp = 4",
    lambda: kda_decode.plan(kda.HEADS_TP[4], kda_decode.V, kda_decode.V, "store", "walk").blocks,
    lambda: f"96 heads / 4 ranks = {kda.HEADS_TP[4]} heads per rank, and main's grid is n_head: "
            f"{kda.HEADS_TP[4]} blocks, {100 * kda.HEADS_TP[4] / hardware.spec('H200').sm_count:.0f} % of the "
            f"SMs. Value tiles (BV = 32) would make it {kda_decode.plan(kda.HEADS_TP[4], kda_decode.V, 32, 'rn', 'walk').blocks}."))


def _tp_ratio(d) -> float:
    return d.point(1, kda_decode.V, "store", "walk").cold.median / d.point(8, kda_decode.V, "store", "walk").cold.median


register(Exercise(
    "05.main_tp1_over_tp8", "main's cold time per step at tp = 1 (96 heads) over its time at tp = 8 (12 heads): "
                            "'about 8', 'about 1' or 'about 1/8'",
    lambda d: "about 8" if _tp_ratio(d) > 4 else ("about 1" if _tp_ratio(d) > 0.5 else "about 1/8"),
    lambda d: f"measured {_tp_ratio(d):.2f}. tp = 1 has 8x the work but also 8x the blocks, and each block walks "
              f"the same 32 columns per warp: the time is one block's walk either way. Sharding cut the work and "
              f"the grid together, so the rank got no faster.",
    kind="choice", choices=("about 8", "about 1", "about 1/8")))


# ------------------------------------------------------------------ §4 derive the constant
register(Exercise(
    "04.splits_for_shape", "the derived split count at ctx 65,536, tp = 4 (32 heads), batch 1, kMlaBlocksPerSm = 2",
    lambda: splits.split(65_536, 32, 1).splits,
    lambda: (lambda s: f"32 heads are {s.head_tiles} head tiles of 16, so the target of 2 x 132 = 264 blocks asks "
                       f"for ceil(264 / {s.head_tiles}) = {-(-264 // s.head_tiles)} splits per tile; 65,536 / "
                       f"{-(-264 // s.head_tiles)} = {65_536 / -(-264 // s.head_tiles):.1f} tokens, rounded up to "
                       f"whole 64-token tiles: a slice of {s.slice_tokens}, so {s.splits} splits and a grid of "
                       f"{s.grid} blocks.")(splits.split(65_536, 32, 1))))

register(Exercise(
    "04.grid_at_ctx", "the derived grid (blocks) at ctx 20,000, tp = 8 (16 heads), batch 1",
    lambda: splits.split(20_000, 16, 1).grid,
    lambda: (lambda s: f"264 splits wanted; 20,000 / 264 = 75.8 tokens, rounded up to one 64-token tile is not "
                       f"enough -- two tiles, a slice of {s.slice_tokens} -- so ceil(20,000 / {s.slice_tokens}) = "
                       f"{s.splits} splits: {s.grid} blocks, {s.share_of_target:.0%} of the target. Whole tiles "
                       f"cost grid at short contexts.")(splits.split(20_000, 16, 1))))


# ------------------------------------------------------------------ §6 one binary, two arms
def _eval_gain(d) -> float:
    a, b = d.eval.main_ms, d.eval.fixed_ms
    return 100 * (a / b - 1)


register(Exercise(
    "06.eval_gain", "the fixed arm's gain in tok/s over main, in %, from eval's two medians (ms/token) printed above",
    _eval_gain,
    lambda d: (f"tok/s is 1000 / (ms per token), so the gain is main's ms over fixed's ms, minus one: "
               f"{d.eval.main_ms:.3f} / {d.eval.fixed_ms:.3f} - 1 = {_eval_gain(d):+.1f} %. Not (main - fixed) / "
               f"main = {100 * (d.eval.main_ms - d.eval.fixed_ms) / d.eval.main_ms:.1f} %: that is the time saved, "
               f"not the rate gained (the lecture's 52.96 -> 49.63 ms is +6.7 % tok/s and -6.3 % time)."),
    abs_tol=0.15))

register(Exercise(
    "06.floor_at_bench", "does LAUNCHLAB_MLA_FLOOR change any launch the bench makes at ctx 2,048? 'yes' or 'no'",
    lambda d: "yes" if splits.split(d.short_ctx + d.bench.long, 16, 1, "hardcoded").splits
                       != splits.split(d.short_ctx + d.bench.long, 16, 1, "derived").splits else "no",
    lambda d: (f"at and below {splits.SPLIT_MIN_CTX:,} tokens no split happens under either floor: the bench's "
               f"positions {d.short_ctx:,}..{d.short_ctx + d.bench.long - 1:,} launch one slice per head tile either "
               f"way, so the gate changes nothing there. Its {d.gate('MLA_FLOOR').cost_ms:.2f} ms per token of eval "
               f"at {d.ctx:,} is missing from the bench's gain ({d.bench_gain_pct:+.1f} % against eval's "
               f"{d.eval_gain_pct:+.1f} %): the instruments disagree because they read different contexts."),
    kind="choice", choices=("yes", "no")))


# ------------------------------------------------------------------ §7 proving bit-identity as bytes
def _identical_at(d, ctx: int) -> str:
    names = {"KDA_VT": "vt", "MLA_FLOOR": "mla floor", "KDA_ELIDE": "fma"}
    same = [names[c.name.split()[0]] for c in d.cases if c.ctx == ctx and c.identical]
    return " and ".join(same) if same else "none"


register(Exercise(
    "07.identical_at_131072", "which arm pairs are byte-identical at ctx 131,072: 'vt', 'vt and mla floor', or 'none'",
    lambda d: _identical_at(d, 131_072) if _identical_at(d, 131_072) in ("vt", "vt and mla floor") else "none",
    lambda d: (lambda vt, ml: f"KDA_VT 0 vs 1 at 131,072: {'IDENTICAL' if vt.identical else 'different'} over "
                              f"{vt.elements:,} elements (every layer, {len(vt.steps)} positions). The MLA floor: "
                              f"{ml.differing:,} elements differ, the first at {ml.first[1] if ml.first else '-'} "
                              f"-- layer 0 is an MLA layer, and {splits.split(ml.ctx + 1, 16, 1, 'hardcoded').splits} "
                              f"splits against {splits.split(ml.ctx + 1, 16, 1, 'derived').splits} reassociate its "
                              f"combine. (The fma arm, dumped at 2,048, differs from its first KDA layer on.)")(
        d.case("KDA_VT 0 vs 1", 131_072), d.case("MLA_FLOOR hardcoded vs derived", 131_072)),
    kind="choice", choices=("vt", "vt and mla floor", "none")))

register(Exercise(
    "07.fma_fix", "the pass-2 recompute must give main's bytes: which form -- 'tmp' (float tmp = a * b; out = tmp + c), "
                  "'inline' (out = a * b + c) or 'rn' (out = __fmul_rn(a, b) + c)?",
    lambda: next(f.form for f in fmatrap.sass_table() if f.family == "fma_forms" and not f.fused),
    lambda: (lambda t: f"main rounded the product to fp32 (it went through shared memory), then added. Under "
                       f"nvcc's default -fmad=true both 'tmp' and 'inline' compile to {t['tmp'].ffma} FFMA: one "
                       f"rounding, different bytes. Only __fmul_rn forces the rounded product ({t['rn'].fmul} FMUL + "
                       f"{t['rn'].fadd} FADD): the one-token fix. -fmad=false scoped to the file does the same for "
                       f"every form.")({f.form: f for f in fmatrap.sass_table() if f.family == "fma_forms"}),
    kind="choice", choices=("tmp", "inline", "rn")))


# ------------------------------------------------------------------ §8 when a reshape is not free
register(Exercise(
    "08.gate_sees_it", "can a parity gate that runs at ctx 4,096 see the hardcoded -> derived change? 'yes' or 'no'",
    lambda d: "no" if next(g for g in d.gate if g.ctx == 4096).identical else "yes",
    lambda d: (lambda g4, g1: f"at 4,096 tokens both arms launch {g4.splits_derived} split (no split below "
                              f"{splits.SPLIT_MIN_CTX:,}): {'identical' if g4.identical else 'different'} bytes. At "
                              f"131,072 they launch {g1.splits_hardcoded} and {g1.splits_derived} splits and "
                              f"{g1.n_differ:,} of {d.elements:,} outputs differ. The gate passes either way: it "
                              f"never reaches the split path.")(
        next(g for g in d.gate if g.ctx == 4096), next(g for g in d.gate if g.ctx == 131_072)),
    kind="choice", choices=("yes", "no")))

register(Exercise(
    "08.batch_invariant_rule", "which rule gives request 0 the same bits at batch 1 and batch 2: 'derived' (from SMs "
                               "and batch) or 'fixed slice'?",
    lambda d: "fixed slice" if next(b for b in d.batch if b.rule.startswith("fixed")).identical else "derived",
    lambda d: " ".join(f"{b.rule}: {b.splits_batch1} splits at batch 1, {b.splits_batch2} at batch 2, "
                       f"{'identical' if b.identical else f'{b.n_differ:,} outputs differ'}." for b in d.batch),
    kind="choice", choices=("derived", "fixed slice")))


# ------------------------------------------------------------------ notebook 10: the lecture's self-check
# The prompts, the model answers and their key points are the instructor's (lab_solutions/10_self_check.json);
# each verdict's "why" adds the course's own measurement of the same thing, read from the recordings.
SELF_CHECK = paths.ROOT / "lab_solutions" / "10_self_check.json"


def _q1_why() -> str:
    k, c = kda.recorded(), bandwidth.CEILING.recorded()
    g = kda.diagnose_rung(k.main, c.tbs)
    return (f"87 us against a 0.9 us floor is ~97x off, and 982 ns over 10 reps is ~1.1 % spread: far and tight, "
            f"the launch is starving. The course's own case: main's KDA step (12 blocks on 132 SMs) ran "
            f"{g.median_us:.1f} us cold against a {g.floor_us:.2f} us floor -- {g.ratio:.0f}x, robust spread "
            f"{100 * g.spread:.2f} % (notebook 03); beside a streaming read the same kernel's spread grew to "
            f"{kda.headline(k)['kda_contended_spread_pct']:.0f} %: what contention looks like.")


def _q2_why() -> str:
    r = rmsnorm.recorded()
    t = r.times(7168)
    return (f"on the H200, width 7,168: 128 scalar threads {t.original.median:.2f} us, the widened block with float4 "
            f"{t.wide.median:.2f} us ({t.original.median / t.wide.median:.2f}x, hot, notebook 02) -- one block "
            f"throughout, because a row's sum of squares is one reduction.")


def _q3_why() -> str:
    r = rmsnorm.recorded()
    i = r.identity_at(7168)
    return (f"measured: the widened apply is byte-identical at every width tried ({all(x.wide_identical for x in r.identity)}); "
            f"widening the reduction changed the output of {i.reduce_out_rows_changed:,} of {i.rows:,} rows at "
            f"width 7,168 (notebook 02).")


def _q4_why() -> str:
    sites = [s for s, hit in audit.grep("head") if hit]
    return (f"the course's own audit (notebook 05, `audit.grep('head')`) finds {len(sites)} launch sites whose grid "
            f"derives from a head count, fine ones included (kda_prep: grid = n_head, ~2 us a call).")


def _q5_why() -> str:
    t = {f.form: f for f in fmatrap.sass_table() if f.family == "fma_forms"}
    return (f"in SASS (notebook 07): `tmp = a*b; out = tmp + c` compiles to {t['tmp'].ffma} FFMA -- a separate "
            f"statement is not a rounding; `__fmul_rn(a, b) + c` to {t['rn'].fmul} FMUL + {t['rn'].fadd} FADD.")


def _q6_why() -> str:
    d = derive.recorded()
    return (f"on the H200 the MLA split kernel at the same 256-block grid ran {d.residency_cost('off'):.2f}x slower "
            f"when padded to one block per SM (notebook 04): the second block is what overlapped loads with math.")


def _q7_why() -> str:
    return ("notebook 07: every arm of the KDA kernel passes a 1e-6 test against float64, including the fma arm "
            "whose bytes differ from main's; only cmp tells them apart.")


def _q8_why() -> str:
    d = reassociation.recorded()
    g4 = next(g for g in d.gate if g.ctx == 4096)
    return (f"nothing: at 4,096 tokens the changed path never runs (the course's MLA floor arms are "
            f"{'identical' if g4.identical else 'different'} at 4,096 and differ at 131,072, notebook 08). A green "
            f"gate is evidence only for the paths it reaches.")


def _q9_why() -> str:
    rs = frontier.lecture_rounds()
    return ("the lecture's PR #71: " + ", ".join(f"round {r.round} {100 * r.over_frontier:.1f} % over the frontier"
                                               for r in rs)
            + f" against a {100 * frontier.GATE:.0f} % gate: the saving per token stayed about the same "
              f"({', '.join(f'{r.saving_ms_per_token:.2f}' for r in rs)} ms) while main got faster (notebook 02).")


_WHY = {"10.q1_ratio": _q1_why, "10.q1_diagnosis": _q1_why, "10.q1_ruled_out": _q1_why, "10.q2_two_ways": _q2_why,
        "10.q3_wide_reduction": _q3_why, "10.q4_audit": _q4_why, "10.q5_fma": _q5_why, "10.q6_two_blocks": _q6_why,
        "10.q7_review": _q7_why, "10.q8_green_gate": _q8_why, "10.q9_tier": _q9_why}


def _register_self_check(path: Path = SELF_CHECK) -> None:
    for key, q in json.loads(path.read_text())["questions"].items():
        why = _WHY[key]
        if q["kind"] == "number":                              # computed from the question's own numbers
            register(Exercise(key, q["prompt"], (lambda a, b: lambda: a / b)(q["measured_us"], q["floor_us"]), why,
                              "number", rel_tol=q["rel_tol"]))
        elif q["kind"] == "choice":
            choices = tuple(c.strip("'") for c in q["prompt"].split(" -- ")[1].replace(" or ", ", ").split(", "))
            register(Exercise(key, q["prompt"], (lambda a: lambda: a)(q["answer"]), why, "choice",
                              choices=tuple(c.split("'")[1] if "'" in c else c for c in choices)))
        else:
            register(Exercise(key, q["prompt"], (lambda m: lambda: m)(q["model"]), why, "written",
                              points=tuple((label, tuple(p)) for label, p in q["points"])))


_register_self_check()
