"""§5's exercises."""
from __future__ import annotations

from launchlab.core import hardware
from launchlab.core.exercise import Exercise, register
from launchlab.kernels import kda_decode
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s05_sharding import audit
from launchlab.sections.s06_one_binary import onebinary
from launchlab.sections.s05_sharding import turn
from launchlab.core import transfer

# ------------------------------------------------------------------ notebook 05
register(Exercise(
    "05.grid_tp4", "how many blocks main's KDA grid has on one rank at tp = 4",
    lambda: kda_decode.plan(kda.HEADS_TP[4], kda_decode.V, kda_decode.V, "store", "walk").blocks,
    lambda: f"96 heads / 4 ranks = {kda.HEADS_TP[4]} heads per rank, and main's grid is n_head: "
            f"{kda.HEADS_TP[4]} blocks, {100 * kda.HEADS_TP[4] / hardware.spec('H200').sm_count:.0f} % of the "
            f"SMs. Value tiles (BV = 32) would make it {kda_decode.plan(kda.HEADS_TP[4], kda_decode.V, 32, 'rn', 'walk').blocks}.",
    hint="main's KDA grid is one block per head: how many of the 96 heads does one rank hold at tp = 4?"))


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
    hint="tp = 1 has 8x the heads, and main gives each head its own block: does one block's walk get longer when "
         "there are more of them, while the grid stays under the SM count?",
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
    hint="all four are starved by their grid; rank them by what they cost per token (µs per call x calls), not by "
         "how few blocks they have.",
    recorded=_recorded_step, shown_by=(r"kda\.step\s+12\s+12\s",)))


# ------------------------------------------------------------------ the your-turn launch (turn.py)
def _tp8(block: int) -> float:
    s, _, _ = turn.TURN.check((kda_decode.V // (block // 32 * kda_decode.COLS_PER_WARP), 12), block)
    return turn.TURN.recorded().at(s).timing.median


register(Exercise(
    "05.turn_tp8_speedup", "at tp = 8 (12 KDA heads), the H200's cold time of the step at block 1,024 divided by "
                           "its time at block 64",
    lambda: _tp8(1024) / _tp8(64),
    lambda: f"Recorded cold on the H200: {_tp8(1024):.1f} µs with 12 blocks of 1,024 (12 SMs of 132 at work), "
            f"{_tp8(64):.1f} µs with 192 blocks of 64: {_tp8(1024) / _tp8(64):.1f}x. The bytes are the same; only "
            f"how many SMs pull them changed.",
    to=0.01, within_pct=5,
    hint="launch at block 1,024 and at block 64 in the cell above (the grid follows: 128 columns over the columns a "
         "block covers) and divide the first time by the second."))


transfer.mark(register(Exercise(
    "05.transfer_slice16_share", "main's KDA step (grid = n_head) at tp = 16 of the 96 heads, on a 16-SM slice: the "
                                 "share of the slice's SMs with work, in percent",
    lambda: 100 * min(96 // 16, 16) / 16,
    lambda: "96 heads over 16 ranks leave 6 per rank, so main's grid is 6 blocks; on 16 SMs that is 6 / 16 = "
            "37.5 %. Sharding divides the grid; a slice divides the machine: the verdict is the ratio of the two.",
    to=1,
    hint="the grid is the heads one rank holds; the share is those blocks over the slice's SMs, as a percent.")),
    "tp = 16 on a 16-SM slice")
