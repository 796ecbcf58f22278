"""The lab's reference answers (instructor side, never in the learner's release): the audit's arithmetic done
right -- the table, the occupancy column, the ranking by recoverable time, the offender's diagnosis, the three
properties of each candidate axis, the ABBA verdict. The learner's side (launchlab.sections.s09_lab.lab) gives
the data and the tools (key, sms, blocks, bytes_per_call, profile_row, sharded_sites, the printers), not these.
lab_tests.py scores answers against them."""
from __future__ import annotations

from launchlab.core import diagnosis
from launchlab.sections.s06_one_binary import onebinary, stepprofile  # noqa: F401 - the annotations' types
from launchlab.sections.s09_lab.lab import LabData, blocks, bytes_per_call, key, profile_row, resident, sms

FLAG_BELOW = 0.5                     # step 2: flag every kernel whose grid covers fewer than half the SMs


def table(profile: "stepprofile.Profile") -> list[dict]:
    """Step 1: one row per kernel launch shape (kernel, grid, block), its calls per token and ms per token.
    cuBLAS's launches have no grid the course chose (grid None): the library picks its own."""
    rows: dict[tuple, dict] = {}
    for r in profile.rows:
        key = (r.kernel, tuple(r.grid), r.block)
        row = rows.setdefault(key, {"kernel": r.kernel, "grid": list(r.grid) or None, "block": r.block or None,
                                    "calls": 0, "ms_per_token": 0.0, "roles": []})
        row["calls"] += r.calls
        row["ms_per_token"] += r.us_per_token / 1e3
        row["roles"].append(r.role)
    return sorted(rows.values(), key=lambda x: -x["ms_per_token"])


def occupancy(row: dict, gpu: str = "H200") -> float | None:
    """Step 2, the lecture's column: blocks / SMs, at most 1 (None for a library launch)."""
    b = blocks(row["grid"])
    return None if b is None else min(b, sms(gpu)) / sms(gpu)


def flagged(rows: list[dict]) -> list[dict]:
    return [r for r in rows if (o := occupancy(r)) is not None and o < FLAG_BELOW]


def wave_fill(row: dict, per_sm: int | None) -> float | None:
    """Step 2's second column: blocks / (SMs x the kernel's resident blocks per SM), at most 1 -- how much of
    one full wave the grid fills (blocks / SMs alone calls a grid of 129 two-per-SM blocks 98 %; it is 49 %)."""
    b = blocks(row["grid"])
    if b is None or not per_sm:
        return None
    return min(b, sms() * per_sm) / (sms() * per_sm)


def recoverable_ms(row: dict) -> float | None:
    """Step 3: time x (1 - wave fill) -- the SM-time the launch leaves idle (row["wave_fill"] set by step 2)."""
    w = row.get("wave_fill")
    return None if w is None else row["ms_per_token"] * (1 - w)


def with_fill(rows: list[dict], profile) -> list[dict]:
    """The table with step 2's columns: occupancy (blocks / SMs) and wave_fill."""
    out = []
    for r in rows:
        r = dict(r)
        r["occupancy"] = occupancy(r)
        r["wave_fill"] = wave_fill(r, resident(profile, r))
        out.append(r)
    return out


def ranking(rows: list[dict]) -> list[dict]:
    """Step 3: the course's launches by recoverable time (library launches excluded: their grid is not ours);
    `rows` carry step 2's columns (with_fill)."""
    return sorted((r for r in rows if r.get("wave_fill") is not None), key=lambda r: -recoverable_ms(r))


def ranking_by_occupancy(rows: list[dict]) -> list[dict]:
    """Step 3 as the lecture ranks: time x (1 - blocks / SMs), the course's launches only."""
    return sorted((r for r in rows if r.get("occupancy") is not None),
                  key=lambda r: -r["ms_per_token"] * (1 - r["occupancy"]))


def moved_up(by_occupancy: list[dict], by_wave_fill: list[dict]) -> str:
    """The key that climbs the most places from the lecture's order to the wave-fill order (first on ties)."""
    first = [key(r) for r in by_occupancy]
    second = [key(r) for r in by_wave_fill]
    return max(second, key=lambda k: first.index(k) - second.index(k))


def gain_and_spread(main: list[float], fix: list[float]) -> tuple[float, float]:
    """Step 6: (median of main's reps - median of the fix's, the wider arm's max - min)."""
    import statistics
    return (statistics.median(main) - statistics.median(fix),
            max(max(main) - min(main), max(fix) - min(fix)))


def verdict(gain: float, spread: float) -> str:
    """Step 6: 'faster' / 'slower' only when the gap exceeds the spread; otherwise 'no measurable difference'."""
    if abs(gain) <= spread:
        return "no measurable difference"
    return "faster" if gain > 0 else "slower"


# Step 9: which ABBA of the lab's recording measures each ranked kernel's fix (notebook 06 measured the same)
FIX_OF = {"rms_norm:rms_norm_f32": "RMS_WIDE", "mla_decode:mla_split": "MLA_FLOOR", "kda_decode:kda_walk<0>": "KDA_VT"}


def diagnose(d: LabData, row: dict) -> "diagnosis.Diagnosis":
    """Step 4: floor, measured time, ratio, spread and the verdict for one table row."""
    r = profile_row(d.step, row)
    return diagnosis.diagnose(bytes_per_call(row["kernel"]), r.reps_us, d.copy_tbs, fixed_us=d.launch_us,
                              geometry=diagnosis.Geometry(blocks(row["grid"]), sms()))


# Step 5: the three properties an axis must have, per candidate (the lecture's §3 and §4 reasoning).
AXES = {
    "rms_norm": {"axis": "the hidden dimension of one row",
                 "no_cross_block_reduction": False, "no_duplicated_reads": True, "layout_unchanged": True,
                 "why": "sum(x^2) spans the whole row: splitting it across blocks needs a cross-block reduction. "
                        "The fix stays in one block and widens it (§2)."},
    "kda_step": {"axis": "the value columns of each head's state (BV = 32)",
                 "no_cross_block_reduction": True, "no_duplicated_reads": True, "layout_unchanged": True,
                 "why": "each output column is a dot product over the keys of its own state column: value tiles "
                        "share nothing but q, k and the decays, which every tile reads anyway (small vectors)."},
    "mla_split": {"axis": "the context (split-KV)",
                  "no_cross_block_reduction": False, "no_duplicated_reads": True, "layout_unchanged": True,
                  "why": "softmax over the context is a reduction: splits need a combine, which reassociates "
                         "(not bit-identical across split counts, §8)."},
}


def abba_verdict(run: "onebinary.GateRun") -> str:
    """Step 6: 'faster' / 'slower' only when the gap between the arms' medians exceeds the wider arm's range of
    reps; otherwise 'no measurable difference'."""
    gap = run.main_ms - run.fixed_ms            # main - (main + fix): positive when the fix is faster
    if abs(gap) <= run.spread_ms:
        return "no measurable difference"
    return "faster" if gap > 0 else "slower"


def headline(d: LabData) -> dict:
    rows = with_fill(table(d.step), d.step)
    top = ranking(rows)[0]
    return {"lab_offender": key(top), "lab_offender_recoverable_ms": recoverable_ms(top),
            "lab_kda_vt_identical": all(c.identical for c in d.cmp if c.fix == "KDA_VT")}
