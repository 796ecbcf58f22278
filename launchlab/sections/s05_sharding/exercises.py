"""§5's exercises."""
from __future__ import annotations

from launchlab.core import hardware
from launchlab.core.exercise import Exercise, register
from launchlab.kernels import kda_decode
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s05_sharding import audit
from launchlab.sections.s06_one_binary import onebinary

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
    kind="choice", choices=("about 8", "about 1", "about 1/8"),
    recorded=lambda: (kda.recorded(),)))


def _flagged(d) -> list:
    """The step's head-derived launches under half the SMs (main's profile at the eval's context)."""
    return [r for r in audit.in_step("head", d.profiles[f"main {onebinary.CTX}"]) if r.starved]


def _recorded_step():
    return (onebinary.recorded(),)


register(Exercise(
    "05.fix_first", "of the step's head-derived launches under half the SMs, which one would you fix first: "
                    "'kda.step', 'kda.prep', 'mla.rope_pack' or 'kda.o_bf16'?",
    lambda d: max(_flagged(d), key=lambda r: r.us_per_token).role,
    lambda d: (lambda rows: "; ".join(f"{r.role}: {r.blocks} blocks, {r.us_per_call:.2f} µs per call = "
                                      f"{r.over_cheapest:.1f}x the step's cheapest launch, {r.us_per_token:.0f} µs "
                                      f"per token" for r in rows[:3])
               + f"; {len(rows) - 3} more at most {max(r.over_cheapest for r in rows[3:]):.1f}x. Every one of them is starved by its grid; only the first costs more than a few launches' "
                 "worth, so only there can a wider grid buy time.")(
        sorted(_flagged(d), key=lambda r: -r.us_per_token)),
    kind="choice", choices=("kda.step", "kda.prep", "mla.rope_pack", "kda.o_bf16"),
    recorded=_recorded_step, shown_by=(r"kda\.step\s+12\s+12\s",)))
