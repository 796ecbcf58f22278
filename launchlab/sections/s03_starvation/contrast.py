"""§3's contrast: the lecture's regime (87 µs against ~0.9 µs, its "95x") beside main's kernel (~26 µs, ~35x).

Both kernels run the same step on the same 12 heads with the same bytes (the `store` traffic) and the same
grid = n_head. What differs is the body: main's kernel (kernels/kda_decode.cu, `kda_walk<0>`) gives each
column to a warp, 32 lanes loading a float4 each and a shuffle tree for the sums; the contrast kernel
(kernels/kda_contrast.cu) gives each column to one thread that walks its 128 rows in turn. Same geometry, a
body four times longer per block: that is why the ratio to the floor is not a property of the geometry alone,
and why the lecture's kernel sat further from its floor than main's does here.

The door measures both in one run, cold L2 (cycling through state copies larger than the L2), 30 graph replays
each, and the contrast kernel hot, and checks the contrast kernel against the float64 reference. It has its own
recording (data/recordings/contrast.json), so that adding it left section03.json's sources unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from launchlab.core.width import fit_all
from launchlab.core import diagnosis, recordings, timing
from launchlab.core.door import Door
from launchlab.kernels import kda_contrast, kda_decode

# The lecture's §3.1 figures: 87 µs against a ~0.9 µs floor (96.7x, which it writes as 95x), stddev 982 ns.
LECTURE_US, LECTURE_FLOOR_US, LECTURE_STDDEV_US = 87.0, 0.9, 0.982
N_HEAD = 12          # one rank at tp = 8: the lecture's 12 blocks
REPS = 30


@dataclass
class ContrastData:
    n_head: int
    grid: int
    block: int
    rows_walked: int
    bytes: int
    cold: timing.Timing                 # the contrast kernel, cold L2
    hot: timing.Timing                  # the contrast kernel, hot L2 (one state replayed)
    main_cold: timing.Timing            # main's kernel (walk, grid = n_head, store), cold, in the same run
    rel_err_o: float                    # against the float64 reference
    rel_err_state: float
    source: str = field(default="live", metadata={recordings.RECORDED: False})


def measure(n_head: int = N_HEAD, reps: int = REPS) -> ContrastData:
    b = kda_contrast.Bench(n_head, cold=True)
    o, s = b.one_step(None, None)
    ref_o, ref_s = kda_contrast.reference(**b.host)
    err_o, err_s = kda_decode.rel_err(o, ref_o), kda_decode.rel_err(s, ref_s)
    main = kda_decode.Bench(n_head, cold=True)
    p = kda_contrast.plan(n_head)
    cold = b.time_cold(reps=reps)
    main_cold = main.time_cold(kda_decode.V, "store", "walk", reps=reps)
    hot = b.time(reps=reps)
    return ContrastData(n_head, p.blocks, p.block, p.rows_walked, p.bytes_moved(), cold, hot, main_cold,
                        err_o, err_s)


_parse, _dump = recordings.codec(ContrastData, "contrast", "contrast")

DOOR: Door[ContrastData] = Door("the lecture-shaped contrast kernel", "contrast", (kda_contrast.FAMILY,
                                                                                 kda_decode.FAMILY, "spin"),
                                measure, _parse, _dump)
data = DOOR.data
recorded = DOOR.recorded


def diagnose(d: ContrastData, ceiling_tbs: float, which: str = "contrast") -> diagnosis.Diagnosis:
    """§3.1's diagnostic on the contrast kernel (or main's kernel, from the same run): cold, against the copy
    ceiling, with its geometry."""
    if which == "contrast":
        return diagnosis.diagnose(d.bytes, d.cold.reps_us, ceiling_tbs, geometry=kda_contrast.geometry(d.n_head))
    return diagnosis.diagnose(d.bytes, d.main_cold.reps_us, ceiling_tbs,
                              geometry=kda_decode.geometry(d.n_head, kda_decode.V, "store", "walk"))


def table(d: ContrastData, ceiling_tbs: float) -> str:
    """Both kernels' verdicts side by side, and the lecture's, with what differs."""
    rows = [("lecture's kernel (PR #77)", "12 x ?", f"{LECTURE_US:.0f}", f"{LECTURE_FLOOR_US:.3f}",
             f"{LECTURE_US / LECTURE_FLOOR_US:.1f}", f"{100 * LECTURE_STDDEV_US / LECTURE_US:.1f} (stddev)")]
    for name, which, shape in (("contrast: thread per column", "contrast", f"{d.grid} x {d.block}"),
                               ("main: warp per column, same run", "main", f"{d.grid} x 128")):
        g = diagnose(d, ceiling_tbs, which)
        rows.append((name, shape, f"{g.median_us:.2f}", f"{g.floor_us:.3f}", f"{g.ratio:.1f}",
                     f"{100 * g.spread:.2f}"))
    out = [f"{'kernel':<32} {'grid x block':>12} {'cold µs':>8} {'floor µs':>9} {'ratio':>6} {'spread %':>13}"]
    out += [f"{a:<32} {b:>12} {c:>8} {e:>9} {f:>6} {s:>13}" for a, b, c, e, f, s in rows]
    out.append(f"floors: the lecture's own (3.1 MB in 0.9 µs); ours, {d.bytes / 1e6:.2f} MB over the copy ceiling "
               f"{ceiling_tbs:.2f} TB/s. Spread: robust (IQR / 1.349 / median) over {d.cold.n} cold reps.")
    return fit_all("\n".join(out))


def headline(d: ContrastData, ceiling) -> dict:
    g = diagnose(d, ceiling.tbs)
    return {"contrast_kernel_ratio": g.ratio, "contrast_kernel_spread_pct": 100 * g.spread,
            "contrast_kernel_cold_us": g.median_us,
            "contrast_over_main_cold_x": d.cold.median / d.main_cold.median,
            "contrast_kernel_starvation": g.verdict == "starvation"}
