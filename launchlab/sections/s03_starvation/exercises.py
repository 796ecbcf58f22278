"""§3's exercises."""
from __future__ import annotations

from launchlab.core import diagnosis
from launchlab.core.exercise import Exercise, register
from launchlab.kernels import kda_decode
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s03_starvation import turn
from launchlab.core import hardware as hw
from launchlab.core import transfer

# ------------------------------------------------------------------ notebook 03
register(Exercise(
    "03.floor_main", "main's floor in microseconds: its bytes per launch over the copy ceiling",
    lambda d, ceiling_tbs: d.main.bytes / (ceiling_tbs * 1e12) * 1e6,
    lambda d, ceiling_tbs: f"{d.main.bytes:,} B / {ceiling_tbs:.2f} TB/s = "
                           f"{d.main.bytes / (ceiling_tbs * 1e12) * 1e6:.3f} µs: four trips of the 768 KiB state "
                           f"(read, stage, re-read, write) plus the per-head vectors, at the rate a copy gets.",
    to=0.01,
    hint="bytes per launch (printed above) divided by the copy ceiling in bytes per second gives seconds: mind "
         "TB/s = 1e12 B/s and µs = 1e-6 s.",
    recorded=lambda: (kda.recorded(), bandwidth.CEILING.recorded().tbs),
    shown_by=(r"floor\s+0\.\d+ µs",)))

_VERDICT_CASE = dict(bytes_moved=8.0e6, reps=[40.0 + 0.1 * ((7 * i) % 10) for i in range(20)], tbs=4.0,
                     geometry=diagnosis.Geometry(24, 132, 8))


def _verdict():
    c = _VERDICT_CASE
    return diagnosis.diagnose(c["bytes_moved"], c["reps"], c["tbs"], geometry=c["geometry"])


register(Exercise(
    "03.verdict", "a kernel moves 8 MB in a median 40.4 µs (20 reps within 1 µs of each other) on a 4 TB/s "
                  "device, with 24 blocks on 132 SMs: 'starvation', 'contention', 'bandwidth-bound' or "
                  "'arithmetic-bound'",
    lambda: _verdict().verdict,
    lambda: "; ".join(_verdict().reasons) + ".",
    kind="choice", choices=("starvation", "contention", "bandwidth-bound", "arithmetic-bound"),
    hint="work out its floor (bytes / bandwidth) and how far the median is above it, then look at the spread of "
         "the reps and at 24 blocks against 132 SMs: far and tight points at the geometry."))

register(Exercise(
    "03.tiles_speedup", "predict how many times faster main's kernel gets (cold) when BV = 32 takes its grid from "
                        "12 to 48 blocks, with the bytes unchanged",
    lambda d: d.main.cold.median / d.rung("walk", kda_decode.BV_TILED, "store").cold.median,
    lambda d: (lambda t: f"measured {d.main.cold.median:.1f} -> {t:.1f} µs = {d.main.cold.median / t:.2f}x. Each "
                         f"warp walks 8 columns instead of 32, so its chain is 4x shorter; what every block still "
                         f"does once (load q, k, g, take exp(g), launch) keeps it under 4x.")(
        d.rung("walk", kda_decode.BV_TILED, "store").cold.median),
    within_pct=20,
    hint="the grid goes up 4x but the bytes do not change: each warp's chain gets 4x shorter, while what every "
         "block does once (loads of q, k, g, the launch) stays. Predict a little under the grid's factor.",
    recorded=lambda: (kda.recorded(),)))


# ------------------------------------------------------------------ the your-turn launch (turn.py)
def _t12(block: int) -> float:
    s, _, _ = turn.TURN.check((kda_decode.V // (block // 32 * kda_decode.COLS_PER_WARP), 12), block)
    return turn.recorded().at(s).timing.median


register(Exercise(
    "03.turn_tiles_speedup", "at 12 heads, the H200's cold time of the tuned step at block 1,024 (grid (1, 12)) "
                             "divided by its time at block 256 (grid (4, 12))",
    lambda: _t12(1024) / _t12(256),
    lambda: f"Recorded cold on the H200: {_t12(1024):.2f} µs with 12 blocks, {_t12(256):.2f} µs with 48: "
            f"{_t12(1024) / _t12(256):.2f}x for the same bytes. A block of 256 covers 32 value columns "
            f"(8 warps x 4), so four tiles cover a head's 128.",
    to=0.01, within_pct=5,
    hint="launch both geometries in the cell above and divide the time at block 1,024 by the time at block 256 "
         "(the larger time over the smaller: a speedup is above 1)."))


transfer.mark(register(Exercise(
    "03.transfer_l4_share", "main's KDA step at tp = 8 (12 blocks) on an L4: the share of its SMs with work, in percent",
    lambda: 100 * 12 / hw.spec("L4").sm_count,
    lambda: "12 blocks on 58 SMs: 12 / 58 = 20.7 % of the L4's SMs have work. The same launch is 9.1 % of the "
            "H200: a smaller GPU starves less at the same grid, which is why a geometry is judged against the SM "
            "count of the machine it runs on.",
    to=1,
    hint="one block runs on one SM: the share is blocks over the L4's SM count, as a percent.")), "an L4: 58 SMs")
