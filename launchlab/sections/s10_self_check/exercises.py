"""Notebook 10's exercises: the lecture's nine self-check questions. Numbers and choices get a verdict on the
spot; written answers get the key points as a checklist and the model answer (launchlab.core.exercise); each
adds the course's own measurement of the same thing."""
from __future__ import annotations

import json
from pathlib import Path

from launchlab.core.exercise import EXERCISES, Exercise, register, verdicts_on_prose
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s02_width import frontier, rmsnorm
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s04_derive import derive
from launchlab.sections.s05_sharding import audit
from launchlab.sections.s07_bit_identity import fmatrap
from launchlab.sections.s08_reshape import reassociation

# ------------------------------------------------------------------ notebook 10: the lecture's self-check
# The prompts, the model answers and their key points are this section's key (key.json, beside this module: the
# self-check is formative and ships with the course); each "why" adds the course's own measurement of the same
# thing, read from the recordings.
SELF_CHECK = Path(__file__).resolve().parent / "key.json"


def _q1_why() -> str:
    k, c = kda.recorded(), bandwidth.CEILING.recorded()
    g = kda.diagnose_rung(k.main, c.tbs)
    return (f"87 µs against a 0.9 µs floor is ~97x off, and 982 ns over 10 reps is ~1.1 % spread: far and tight, "
            f"the launch is starving. The course's own case: main's KDA step (12 blocks on 132 SMs) ran "
            f"{g.median_us:.1f} µs cold against a {g.floor_us:.2f} µs floor -- {g.ratio:.0f}x, robust spread "
            f"{100 * g.spread:.2f} % (notebook 03); beside a streaming read the same kernel's spread grew to "
            f"{kda.headline(k)['kda_contended_spread_pct']:.0f} %: what contention looks like.")


def _q1_ratio_why() -> str:
    return ("87 µs / 0.9 µs = 96.7: the kernel takes about 97 times what moving its bytes would. The lecture writes "
            "it as 95x, its rounding of the same two numbers. A ratio alone is not yet a diagnosis: the next "
            "question asks what the spread adds.")


def _q2_why() -> str:
    r = rmsnorm.recorded()
    t = r.times(7168)
    return (f"on the H200, width 7,168: 128 scalar threads {t.original.median:.2f} µs, the widened block with float4 "
            f"{t.wide.median:.2f} µs ({t.original.median / t.wide.median:.2f}x, hot, notebook 02) -- one block "
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
            f"derives from a head count, fine ones included (kda_prep: grid = n_head, ~2 µs a call).")


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


_WHY = {"10.q1_ratio": _q1_ratio_why, "10.q1_diagnosis": _q1_why, "10.q1_ruled_out": _q1_why, "10.q2_two_ways": _q2_why,
        "10.q3_wide_reduction": _q3_why, "10.q4_audit": _q4_why, "10.q5_fma": _q5_why, "10.q6_two_blocks": _q6_why,
        "10.q7_review": _q7_why, "10.q8_green_gate": _q8_why, "10.q9_tier": _q9_why}


def _register_self_check(path: Path = SELF_CHECK) -> None:
    for key, q in json.loads(path.read_text())["questions"].items():
        why = _WHY[key]
        if q["kind"] == "number":                              # computed from the question's own numbers
            register(Exercise(key, q["prompt"], (lambda a, b: lambda: a / b)(q["measured_us"], q["floor_us"]), why,
                              "number", hint=q["hint"], to=q["to"]))
        elif q["kind"] == "choice":
            choices = tuple(c.strip("'") for c in q["prompt"].split(" -- ")[1].replace(" or ", ", ").split(", "))
            register(Exercise(key, q["prompt"], (lambda a: lambda: a)(q["answer"]), why, "choice", hint=q["hint"],
                              choices=tuple(c.split("'")[1] if "'" in c else c for c in choices)))
        else:
            register(Exercise(key, q["prompt"], (lambda m: lambda: m)(q["model"]), why, "written",
                              points=tuple(q["points"])))


_register_self_check()


def written(data_dir=None) -> list:
    """The self-check's written exercises (what summary --json reads for "10")."""
    return [e for e in EXERCISES.values() if e.kind == "written" and e.key.startswith("10.")]


def headline(_written) -> dict:
    return {"prose_auto_verdicts": verdicts_on_prose()}
