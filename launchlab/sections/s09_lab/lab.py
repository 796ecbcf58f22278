"""The lab: the lecture's 8-step launch-geometry audit, on the course's decode step under the `main` preset.

The `lab` recording is what a learner audits in replay (live: measured now, about a minute and a half):

    profile   one full-depth step at ctx 131,072 under `main`, every launch timed inside a CUDA graph
              (launchlab.sections.s06_one_binary.stepprofile), with each row's per-replay times (10 replays)
    fixes     ABBA from `main`, one fix at a time (A = main with the fix, B = main), 3 pairs, reps kept
    cmp       main against main + one fix, dumps of every layer compared byte for byte at two depths
    sweep     the step's ms/token as one offender's geometry moves: the norm's block, the KDA value tile, the
              MLA split count (Model.overrides) -- what the lab's widget shows in replay
    ceiling   the copy ceiling measured in the same run (the floor's bandwidth)

Beside the data, the tools the lab's steps name (`key`, `sms`, `blocks`, `bytes_per_call`, `profile_row`,
`sharded_sites`, and printers that show a learner's own table and ranking). The audit's answers are not here:
the reference arithmetic (the table, the occupancy column, the ranking, the diagnosis, the axes, the verdict)
lives with the instructor (lab_solutions/lab_reference.py), and the hidden tests score a learner's answers
against it outside the learner's process (launchlab.faces.grading).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from launchlab.core import gates, hardware, mode, occupancy, recordings
from launchlab.core.door import Door
from launchlab.kernels import decode, kda_decode, stream_read
from launchlab.sections.s00_start import instruments
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s05_sharding import audit
from launchlab.sections.s06_one_binary import onebinary, stepprofile
from launchlab.sections.s07_bit_identity import identity

CTX = onebinary.CTX
SHORT_CTX = 2048
FIXES = ("RMS_WIDE", "KDA_VT", "KDA_BODY", "MLA_FLOOR")          # main's value -> the fixed default, one at a time
CMP_FIXES = ("KDA_VT", "RMS_WIDE")
SWEEPS = {"rms_block": (128, 256, 512, 1024), "kda_bv": (16, 32, 64, 128),
          "mla_splits": (64, 128, 132, 256, 264, 512)}
SWEEP_ROLE = {"rms_block": "input_norm", "kda_bv": "kda.step", "mla_splits": "mla.split"}
FINE_KERNEL = "decode_ops:kda_prep"  # grid = n_head like main's KDA step, and fine: it must stay off the fix list


# ------------------------------------------------------------------ the recording
@dataclass
class SweepPoint:
    knob: str                        # a decode.OVERRIDES key
    value: int
    ms_per_token: float | None       # graph-timed step at ctx, None where the geometry cannot launch
    grid: list[int]
    block: int
    kernel: str
    error: str | None = None

    @property
    def blocks(self) -> int:
        n = 1
        for g in self.grid:
            n *= g
        return n


@dataclass
class CmpCase:
    fix: str
    ctx: int
    identical: bool
    differing: int
    elements: int
    first: list | None
    sha_a: str
    sha_b: str


@dataclass
class LabData:
    ctx: int
    layers: int
    copy_tbs: float                  # the copy ceiling, same run
    launch_us: float                 # a trivial kernel's cost in a CUDA graph (the floor's fixed part)
    profile: dict                    # stepprofile.Profile.to_dict() of the step under main
    fixes: list                      # onebinary.GateRun.to_dict(): A = main + the fix, B = main
    cmp: list[CmpCase]
    sweep: list[SweepPoint]
    source: str = field(default="", metadata={recordings.RECORDED: False})

    @property
    def step(self) -> "stepprofile.Profile":
        return stepprofile.Profile.from_dict(self.profile)

    def fix(self, gate: str) -> "onebinary.GateRun":
        return next(onebinary.GateRun.from_dict(f) for f in self.fixes if f["gate"] == gate)

    def swept(self, knob: str) -> list[SweepPoint]:
        return [p for p in self.sweep if p.knob == knob]


def _sweep_one(model, ctx: int, knob: str, v: int, tokens: int = 4, reps: int = 3) -> SweepPoint:  # pragma: no mutate block (live only)
    model.overrides = {knob: v}
    try:
        log = model.launches(ctx)                 # a step at ctx: the graph's warm-up at its first position
        ln = next(x for x in log if x.role == SWEEP_ROLE[knob])
        ms = onebinary.eval_step(model, tokens, reps=reps, warmed=(ctx,)).ms_per_token
        return SweepPoint(knob, v, ms, list(ln.grid), ln.block, ln.kernel)
    except (ValueError, RuntimeError) as e:                  # a geometry the kernel refuses, said before launch
        return SweepPoint(knob, v, None, [], 0, "", f"{type(e).__name__}: {e}")
    finally:
        model.overrides = {}


def _sweep(model, ctx: int, tokens: int = 4, reps: int = 3) -> list[SweepPoint]:  # pragma: no mutate block (live only)
    return [_sweep_one(model, ctx, knob, v, tokens, reps) for knob, values in SWEEPS.items() for v in values]


def measure(ctx: int = CTX, layers: int = decode.FULL_LAYERS, pairs: int = 3, reps: int = 3,
            profile_reps: int = 10, tokens: int = onebinary.EVAL_TOKENS, sweep_reps: int = 3,
            cmp_fixes: tuple[str, ...] = CMP_FIXES) -> LabData:  # pragma: no mutate block (live only)
    mode.require_live("measuring the lab's decode step")
    import cupy as cp
    main, fixed = gates.preset("main"), gates.preset("fixed")
    sr = stream_read.StreamRead()
    copy = bandwidth.Ceiling(sr.copy_ceiling(reps=10), sr.nbytes).tbs
    del sr
    launch_us = instruments.launch_costs().launch_graph_us
    model = decode.build(decode.Config(layers=layers), ctx=ctx, extra=9)
    with gates.setting(**main):
        prof = stepprofile.profile(model, ctx, reps=profile_reps, preset="main")
        sweep = _sweep(model, ctx, reps=sweep_reps)
    runs = []
    for g in FIXES:
        with_fix = dict(main, **{g: fixed[g]})
        runs.append(onebinary.GateRun(g, fixed[g], main[g],
                                      onebinary.abba(model, with_fix, main, tokens, pairs, reps,
                                                     (f"main + {g}={fixed[g]}", "main"))))
    _live["model"] = model           # kept for the lab's later live cells (the sweep's widget, steps 6-7)
    cp.get_default_memory_pool().free_all_blocks()
    cfg = decode.Config(layers=layers)
    cmp = []
    for g in cmp_fixes:
        for c in (SHORT_CTX, ctx):
            r = identity.compare(f"main vs main + {g}={fixed[g]}", c, main, dict(main, **{g: fixed[g]}), cfg, 2)
            cmp.append(CmpCase(g, c, r.identical, r.differing, r.elements, r.first, r.sha_a, r.sha_b))
    return LabData(ctx, layers, copy, launch_us, prof.to_dict(), [r.to_dict() for r in runs], cmp, sweep,
                   source="live")


_parse, _dump = recordings.codec(LabData, "lab", "lab")


DOOR: Door[LabData] = Door("the lab's decode step", "lab", ("decode_ops", "rms_norm", "kda_decode", "mla_decode",
                                                           "stream_read", "spin", "waves"), measure, _parse, _dump,
                            quick={"pairs": 2, "reps": 2, "profile_reps": 3, "tokens": 4, "sweep_reps": 2,
                                   "cmp_fixes": ()})   # the course's live run: no cell reads data.cmp (steps 6-7 cmp
                                                       # the learner's own arms, fix.cmp), so its 4 builds are skipped
data = DOOR.data
recorded = DOOR.recorded


MAIN_SETTING = {"rms_block": 128, "kda_bv": 128, "mla_splits": 128}   # the swept point nearest main's geometry
KNOBS = {"rms_block": "the norm's block (threads)", "kda_bv": "the KDA value tile BV",
         "mla_splits": "the MLA split count"}
_live: dict = {}


def _live_point(knob: str, value: int) -> SweepPoint:  # pragma: no mutate block (live only)
    """Relaunch now: the step under `main` with one override, graph-timed (the model is built once)."""
    if "model" not in _live:
        _live["model"] = decode.build(decode.Config(), ctx=CTX, extra=9)
    with gates.setting(**gates.preset("main")):
        return _sweep_one(_live["model"], CTX, knob, value)


def point(d: LabData, knob: str, value: int) -> tuple[SweepPoint, str]:
    """One point of the lab's sweep: relaunched now (live) or the recorded one (replay), and where it came from."""
    if knob not in SWEEPS or value not in SWEEPS[knob]:
        raise ValueError(f"{knob}={value!r} is not a swept point; {knob} takes {SWEEPS.get(knob)}")
    return DOOR.choose(live=lambda: (_live_point(knob, value), "measured now"),  # pragma: no mutate (live only)
                       replay=lambda: (next(p for p in d.swept(knob) if p.value == value), "recorded on the H200"))


# ------------------------------------------------------------------ the tools the audit's steps name
def sms(gpu: str = "H200") -> int:
    return hardware.spec(gpu).sm_count


def blocks(grid) -> int | None:
    if not grid:
        return None
    n = 1
    for g in grid:
        n *= int(g)
    return n


def resident(profile: "stepprofile.Profile", row: dict, gpu: str = "H200") -> int | None:
    """Step 2: how many blocks of a row's kernel one SM holds at once (the occupancy calculator on the recorded
    registers and shared memory per block; None for cuBLAS, whose kernels are the library's)."""
    if row["grid"] is None:
        return None
    r = profile_row(profile, row)
    return occupancy.occupancy(row["block"], r.registers, r.smem or 0, gpu).blocks_per_sm


def key(row: dict) -> str:
    """A row's name in the lab's answers: "family:expr grid block", e.g. "rms_norm:rms_norm_f32 [1] 128"."""
    return f"{row['kernel']} {row['grid']} {row['block']}"


def bytes_per_call(kernel: str, cfg: "decode.Config | None" = None) -> int:
    """Step 4: the global bytes one call moves at least, for the kernels the ranking can put on top."""
    cfg = cfg or decode.Config()
    fam, expr = kernel.split(":", 1)
    if fam == "rms_norm":
        return 3 * cfg.hidden * 4                                     # x and w read, y written (fp32)
    if fam == "kda_decode":
        mode_ = "store" if "<0" in expr else "rn" if "<1" in expr else "fma"
        return kda_decode.bytes_moved(cfg.kda_heads, cfg.kda_dim, mode_)
    if fam == "decode_ops" and expr == "kda_prep":
        return (cfg.kda_proj + 4 * cfg.kda_heads * cfg.kda_dim + cfg.kda_heads) * 4
    raise ValueError(f"no byte count for {kernel}")


def profile_row(profile: "stepprofile.Profile", row: dict) -> "stepprofile.Row":
    """The profile row with the most calls among those a table row groups (its per-replay reps)."""
    rs = [r for r in profile.rows if r.kernel == row["kernel"] and list(r.grid) == (row["grid"] or [])
          and (r.block or None) == row["block"]]
    return max(rs, key=lambda r: r.calls)


def site_name(site: "audit.Site") -> str:
    """A launch site as the lab names it: file, function and the grid expression as written (no line)."""
    return f"{site.file}:{site.function} grid={site.grid}"


def sharded_sites(dimension: str = "head") -> list[tuple[str, bool]]:
    """Step 8: every launch site of the package, and whether its grid derives from the dimension."""
    return [(site_name(s), hit) for s, hit in audit.grep(dimension)]


# ------------------------------------------------------------------ what the lab's cells print (blank-safe)
def _answered(*xs) -> bool:
    return all(x is not None and x is not Ellipsis for x in xs)


def show_table(table, flagged=None) -> None:  # pragma: no mutate block (display: nbval compares it)
    """Print a learner's table (step 1), with its occupancy column and flags once they exist (step 2)."""
    if not _answered(table) or not isinstance(table, list):
        print("(the table is not built yet: fill in the cell above)")
        return
    occ = all("occupancy" in r for r in table)
    print(f"{'kernel':<34} {'grid':>10} {'block':>5} {'calls':>5} {'ms/token':>8}" + (f" {'occupancy':>9}" if occ else ""))
    for r in table:
        grid = "cuBLAS" if r.get("grid") is None else "x".join(str(g) for g in r["grid"])
        line = f"{r['kernel'][:34]:<34} {grid:>10} {r.get('block') or '':>5} {r['calls']:>5} {r['ms_per_token']:>8.3f}"
        if occ:
            o = r["occupancy"]
            line += f" {'' if o is None else f'{o:.1%}':>9}"
            if _answered(flagged) and key(r) in flagged:
                line += "  < 50 %"
        print(line)
    print(f"{len(table)} launch shapes, {sum(r['calls'] for r in table):,} launches per token")


def show_ranking(table, ranking, refined=None, top: int = 6) -> None:  # pragma: no mutate block (display: nbval compares it)
    """Print the top of a learner's ranking (step 3) with both idle columns -- by blocks / SMs and by wave fill --
    and, given a refined ranking, where each of its keys stood in the first; then the profiler's order by time."""
    if not _answered(table, ranking) or not isinstance(ranking, list):
        print("(the ranking is not built yet: fill in the cell above)")
        return
    by = {key(r): r for r in table}

    def idle(r, col):
        v = r.get(col)
        return "" if v is None else f"{r['ms_per_token'] * (1 - v):.3f}"

    first = "by blocks / SMs" if refined is not None else "your ranking"
    for title, keys in ((first, ranking), ("by wave fill", refined)):
        if not _answered(keys) or not isinstance(keys, list):
            continue
        print(f"{title:<46} {'ms/token':>8} {'idle ms by SMs':>14} {'by wave fill':>12}"
              + ("  was" if keys is refined else ""))
        for k in keys[:top]:
            r = by.get(k)
            if r is None:
                print(f"{k:<46} (not a key of the table)")
                continue
            was = f"  #{ranking.index(k) + 1}" if keys is refined and k in ranking else ""
            print(f"{k[:46]:<46} {r['ms_per_token']:>8.3f} {idle(r, 'occupancy'):>14} {idle(r, 'wave_fill'):>12}{was}")
    timed = [key(r) for r in sorted(table, key=lambda r: -r["ms_per_token"]) if r.get("grid") is not None]
    print("the profiler's order by time: " + ", ".join(k.split(':', 1)[1] for k in timed[:4]) + ", ...")
