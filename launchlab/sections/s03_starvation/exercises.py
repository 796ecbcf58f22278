"""§3's exercises."""
from __future__ import annotations

from launchlab.core import diagnosis
from launchlab.core.exercise import Exercise, register
from launchlab.kernels import kda_decode
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s03_starvation import kda

# ------------------------------------------------------------------ notebook 03
register(Exercise(
    "03.floor_main", "main's floor in microseconds: its bytes per launch over the copy ceiling",
    lambda d, ceiling_tbs: d.main.bytes / (ceiling_tbs * 1e12) * 1e6,
    lambda d, ceiling_tbs: f"{d.main.bytes:,} B / {ceiling_tbs:.2f} TB/s = "
                           f"{d.main.bytes / (ceiling_tbs * 1e12) * 1e6:.3f} µs: four trips of the 768 KiB state "
                           f"(read, stage, re-read, write) plus the per-head vectors, at the rate a copy gets.",
    rel_tol=0.03,
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
    kind="choice", choices=("starvation", "contention", "bandwidth-bound", "arithmetic-bound")))

register(Exercise(
    "03.tiles_speedup", "predict how many times faster main's kernel gets (cold) when BV = 32 takes its grid from "
                        "12 to 48 blocks, with the bytes unchanged",
    lambda d: d.main.cold.median / d.rung("walk", kda_decode.BV_TILED, "store").cold.median,
    lambda d: (lambda t: f"measured {d.main.cold.median:.1f} -> {t:.1f} µs = {d.main.cold.median / t:.2f}x. Each "
                         f"warp walks 8 columns instead of 32, so its chain is 4x shorter; what every block still "
                         f"does once (load q, k, g, take exp(g), launch) keeps it under 4x.")(
        d.rung("walk", kda_decode.BV_TILED, "store").cold.median),
    rel_tol=0.2,
    recorded=lambda: (kda.recorded(),)))
