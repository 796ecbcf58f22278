"""The lab's hidden tests (instructor side, never in the learner's release): each question scored from the
learner's answers as plain JSON values -- what the sandboxed run of the submission wrote -- against reference
values the instructor's code computes from the lab's recording. Nothing here runs in the learner's process,
so nothing the learner's code does reaches it (launchlab.faces.grading: step 2).

A check is (points, passed, message): the message is what the learner reads when the point is lost -- the
failing check and why, never the reference value itself. Numbers compare with a relative tolerance of 1e-3:
a value typed from the notebook's printout to 4 significant figures passes.
"""
from __future__ import annotations

import re
from pathlib import Path

REL = 1e-3

# the answers each question reads (the names the learner's cells assign)
ANSWERS = {
    "q1": ("table",),
    "q2": ("table", "flagged"),
    "q3": ("ranking", "offender"),
    "q4": ("offender", "floor_us", "measured_us", "ratio", "spread_pct", "diagnosis", "ruled_out"),
    "q5": ("axes", "offender_fails"),
    "q6": ("reps_main", "reps_fix", "gain_ms", "spread_ms", "verdict"),
    "q7": ("claim", "evidence", "depths"),
    "q8": ("head_sites", "fine_site"),
    "q9": ("largest_measured", "why_differ"),
}
POINTS = {"q1": 2, "q2": 2, "q3": 2, "q4": 3, "q5": 2, "q6": 3, "q7": 2, "q8": 2, "q9": 2}
PROPERTIES = ("no_cross_block_reduction", "no_duplicated_reads", "layout_unchanged")
ANSWER_CHARS = 65536          # an answer longer than this as JSON is not read (the table is about 6,000)
SITE_CHARS = 300              # a site longer than this is not a site
MAX_SITES = 64


def reference_module():
    """lab_reference.py beside this file: the audit's arithmetic done right (the instructor's)."""
    from launchlab.faces import grading
    return grading._instructor(Path(__file__).with_name("lab_reference.py"), "lab_solutions.lab_reference")


def references() -> dict:
    """Every reference value, as plain JSON, from the lab's recording (the instructor's computation)."""
    from launchlab.sections.s09_lab import lab as tools
    lab = reference_module()
    data = tools.recorded()
    rows = lab.with_fill(lab.table(data.step), data.step)
    ranked = lab.ranking(rows)
    run = data.fix("RMS_WIDE")
    diagnoses = {}                      # every rankable row the byte count covers: step 4 follows the learner's
    for r in ranked:                    # own offender, so a wrong step 3 is not charged twice
        try:
            d = lab.diagnose(data, r)
        except ValueError:
            continue
        diagnoses[tools.key(r)] = {"floor_us": d.floor_us, "measured_us": d.median_us,
                                 "ratio": d.median_us / d.floor_us, "spread_pct": 100 * d.spread}
    return {
        "table": [{"kernel": r["kernel"], "grid": r["grid"], "block": r["block"], "calls": r["calls"],
                   "ms_per_token": r["ms_per_token"], "occupancy": r["occupancy"], "wave_fill": r["wave_fill"]}
                  for r in rows],
        "flagged": sorted(tools.key(r) for r in lab.flagged(rows)),
        "ranking": [tools.key(r) for r in ranked],
        "fine_kernel": "decode_ops:kda_prep",
        "diagnoses": diagnoses,
        "axes": {name: {p: v[p] for p in PROPERTIES} for name, v in lab.AXES.items()},
        "axes_why": {name: v["why"] for name, v in lab.AXES.items()},
        "reps_main": run.ms("B"), "reps_fix": run.ms("A"), "gain_ms": run.main_ms - run.fixed_ms,
        "spread_ms": run.spread_ms, "verdict": lab.abba_verdict(run),
        "identical_depths": sorted(c.ctx for c in data.cmp if c.fix == "RMS_WIDE" and c.identical),
        "head_sites": sorted({s for s, hit in tools.sharded_sites("head") if hit}),
        "gains": {g: data.fix(g).main_ms - data.fix(g).fixed_ms for g in lab.FIX_OF.values()},
    }


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def close(a, b, rel: float = REL) -> bool:
    return (isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(b, (int, float))
            and abs(a - b) <= rel * max(abs(b), 1e-12))


def _row_key(r: dict) -> tuple:
    return (r.get("kernel"), str(r.get("grid")), r.get("block"))


def _rows(table) -> list[dict] | None:
    return table if isinstance(table, list) and table and all(isinstance(r, dict) for r in table) else None


def q1(a: dict, ref: dict) -> list:
    rows = _rows(a["table"])
    form = rows is not None and all({"kernel", "grid", "block", "calls", "ms_per_token"} <= set(r) for r in rows)
    want = {_row_key(r): r for r in ref["table"]}
    known = form and all(_row_key(r) in want for r in rows)               # shapes of the step, none made up
    out = [(1, known and sum(r["calls"] for r in rows if type(r["calls"]) is int) == sum(
                r["calls"] for r in ref["table"]),
            "table: one dict per launch shape of the step with kernel, grid, block, calls and ms_per_token, whose "
            "calls add up to every launch of the step")]
    got = {_row_key(r): r for r in rows} if form else {}
    same = set(got) == set(want) and all(got[k]["calls"] == r["calls"] and close(got[k]["ms_per_token"],
                                                                               r["ms_per_token"])
                                         for k, r in want.items())
    out.append((1, same, "table: one row per (kernel, grid, block), its calls and ms per token summed over the "
                         "roles that share the shape"))
    return out


def _column(rows: list, ref: dict, name: str) -> bool:
    """Every row of the step there, none made up, and this column right in each (None exactly where it is)."""
    want = {_row_key(r): r[name] for r in ref["table"]}
    return (bool(rows) and len(rows) == len(want) and {_row_key(r) for r in rows} == set(want)
            and all(name in r for r in rows) and all(
                (r[name] is None) == (want[_row_key(r)] is None) and (r[name] is None or close(r[name], want[_row_key(r)]))
                for r in rows))


def q2(a: dict, ref: dict) -> list:
    rows = _rows(a["table"]) or []
    occ_ok = _column(rows, ref, "occupancy") and _column(rows, ref, "wave_fill")
    flagged = a["flagged"]
    return [(1, occ_ok, "occupancy: blocks / SMs at most 1 (blocks = the product of the grid), and wave_fill: blocks "
                        "/ (SMs x the kernel's resident blocks per SM) at most 1; None exactly for cuBLAS's rows"),
            (1, isinstance(flagged, list) and sorted(map(str, flagged)) == ref["flagged"],
             "flagged: every row under 50 % occupancy, the fine ones too, named by lab.key(row)")]


def q3(a: dict, ref: dict) -> list:
    ranking, offender = a["ranking"], a["offender"]
    form = isinstance(ranking, list) and ranking and all(isinstance(k, str) for k in ranking)
    known = bool(form) and set(ranking) <= set(ref["ranking"])          # keys of the step's own rows, none made up
    return [(1, known and offender == ranking[0], "ranking: keys from lab.key(row); the offender is its top"),
            (1, bool(form) and ranking[:3] == ref["ranking"][:3] and offender == ref["ranking"][0]
             and ref["fine_kernel"] not in str(offender),
             "ranking: by ms x (1 - wave_fill), cuBLAS left out; the kernel that is fine is flagged, not the offender")]


def q4(a: dict, ref: dict) -> list:
    d = ref["diagnoses"].get(a["offender"]) if isinstance(a["offender"], str) else None
    d = d or ref["diagnoses"][ref["ranking"][0]]
    ruled = a["ruled_out"]
    ruled = sorted(ruled) if isinstance(ruled, list) and all(isinstance(x, str) for x in ruled) else None
    return [(1, close(a["floor_us"], d["floor_us"], 0.05) and close(a["measured_us"], d["measured_us"], 0.01)
             and close(a["ratio"], d["ratio"], 0.05),
             "floor_us (bytes / bandwidth + a launch), measured_us (the median of the row's reps) and their ratio, "
             "for your offender"),
            (1, isinstance(a["spread_pct"], (int, float)) and not isinstance(a["spread_pct"], bool)
             and abs(a["spread_pct"] - d["spread_pct"]) <= 0.05 + 0.1 * d["spread_pct"],
             "spread_pct: a median needs its spread -- the robust spread over the reps, in %"),
            (1, a["diagnosis"] == "starvation" and ruled == ["arithmetic", "contention"],
             "diagnosis: far off its floor and tight over the reps -- which alternatives does that rule out?")]


def q5(a: dict, ref: dict) -> list:
    axes = a["axes"]
    ok = isinstance(axes, dict) and set(axes) == set(ref["axes"]) and all(
        isinstance(axes[n], dict) and {p: axes[n].get(p) for p in PROPERTIES} == ref["axes"][n] for n in ref["axes"])
    wrong = [n for n in ref["axes"] if not (isinstance(axes, dict) and isinstance(axes.get(n), dict)
                                            and {p: axes[n].get(p) for p in PROPERTIES} == ref["axes"][n])]
    why = "; ".join(f"{n}: {ref['axes_why'][n]}" for n in wrong[:1])
    return [(1, ok, "axes: the three properties for each candidate" + (f" ({why})" if why else "")),
            (1, a["offender_fails"] == "no_cross_block_reduction",
             "offender_fails: which property does splitting a norm's row across blocks break?")]


def q6(a: dict, ref: dict) -> list:
    def reps(x, want):                  # every rep a number (None, a bool or a string is not dropped: it fails)
        return (isinstance(x, list) and len(x) == len(want) and all(_number(y) for y in x)
                and all(close(u, v) for u, v in zip(sorted(x), sorted(want))))
    return [(1, reps(a["reps_main"], ref["reps_main"]) and reps(a["reps_fix"], ref["reps_fix"])
             and a["verdict"] in ("faster", "slower", "no measurable difference"),
             "reps_main and reps_fix: the recorded per-rep ms/token of each arm (three pairs), and a verdict"),
            (1, close(a["gain_ms"], ref["gain_ms"], 0.01),
             "gain_ms: the median of main's reps minus the median of the fix's"),
            (1, close(a["spread_ms"], ref["spread_ms"], 0.01) and a["verdict"] == ref["verdict"],
             "spread_ms and verdict: faster only when the gap is wider than the wider arm's range")]


def q7(a: dict, ref: dict) -> list:
    depths = a["depths"]
    form = a["claim"] in ("bit-identical", "not bit-identical") and a["evidence"] in ("cmp", "tolerance")
    known = (isinstance(depths, list) and all(type(d) is int for d in depths) and len(set(depths)) >= 2
             and set(depths) <= set(ref["identical_depths"]))
    return [(1, form and known, "depths: more than one depth, each one where the bytes matched (claim and evidence "
                                "in the forms the step asks for)"),
            (1, a["claim"] == "bit-identical" and a["evidence"] == "cmp",
             "a bit-identity claim rests on bytes compared (cmp)")]


def _site(s) -> str:
    """A site, whatever the format it was copied in (the lab's `file:function grid=...` or notebook 05's)."""
    s = str(s)
    if len(s) > SITE_CHARS:                       # bounded input: the match below is at worst quadratic in it
        return s[:SITE_CHARS]
    m = re.search(r"([\w/]+\.py)\W+(\w+)\(?\)?\W+grid\s*=\s*(.+)$", s.strip())
    return f"{m.group(1).split('/')[-1]}:{m.group(2)}:{m.group(3).replace(' ', '')}" if m else s


def q8(a: dict, ref: dict) -> list:
    sites, fine = a["head_sites"], a["fine_site"]
    listed = isinstance(sites, list) and len(sites) <= MAX_SITES
    got = {_site(s) for s in sites} if listed else set()
    want = {_site(s) for s in ref["head_sites"]}
    fine_ok = _site(fine) == _site("kernels/decode.py:step grid=(c.kda_heads,)")
    return [(1, listed and fine_ok and _site(fine) in got,
             "fine_site: main's KDA geometry that is fine (kda_prep: grid = n_head, 2 us a call), on head_sites too"),
            (1, listed and got == want, "head_sites: every launch whose grid derives from a head count")]


def q9(a: dict, ref: dict) -> list:
    best = max(ref["gains"], key=ref["gains"].get)
    return [(1, a["largest_measured"] == best, "largest_measured: the gate whose ABBA gained the most ms/token"),
            (1, a["why_differ"] == "upper bound",
             "why_differ: the spreads are a few microseconds and the column is the right one -- what does idle "
             "SM-time say about what a fix can win?")]


QUESTIONS = {"q1": q1, "q2": q2, "q3": q3, "q4": q4, "q5": q5, "q6": q6, "q7": q7, "q8": q8, "q9": q9}


def score(answers: dict, ref: dict) -> dict:
    """{question: [(points, passed, message), ...]}; an answer that is missing or not a plain value fails its
    checks with the reason (not answered, not an answer, its cell raised)."""
    return {q: score_one(q, answers, ref) for q in QUESTIONS}


def score_one(q: str, answers: dict, ref: dict) -> list:
    """One question's checks; an answer too long to be one fails them all, saying so."""
    import json
    a = {name: answers.get(name) for name in ANSWERS[q]}
    for name, v in a.items():
        try:
            n = len(json.dumps(v))
        except (TypeError, ValueError, RecursionError):
            n = ANSWER_CHARS + 1
        if n > ANSWER_CHARS:
            return [(POINTS[q], False, f"`{name}` is too long to be an answer ({n:,} characters as JSON; at most "
                                       f"{ANSWER_CHARS:,})")]
    try:
        out = [(p, bool(ok), msg) for p, ok, msg in QUESTIONS[q](a, ref)]
    except Exception as e:                       # noqa: BLE001 - an odd answer fails its checks, not the grader
        out = [(POINTS[q], False, f"the answers of {q} could not be read ({type(e).__name__}: {e})")]
    assert sum(p for p, _, _ in out) == POINTS[q], q
    return out
