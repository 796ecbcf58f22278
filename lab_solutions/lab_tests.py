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
    "q3": ("ranking_by_occupancy", "ranking", "offender", "moved_up", "why_order_changes"),
    "q4": ("offender", "floor_us", "measured_us", "ratio", "spread_pct", "diagnosis", "ruled_out"),
    "q5": ("axes", "offender_fails"),
    "q6": ("reps_main", "reps_fix", "gain_ms", "spread_ms", "verdict"),
    "q7": ("claim", "evidence", "depths"),
    "q8": ("head_sites", "fine_site"),
    "q9": ("largest_measured", "why_differ"),
}
POINTS = {"q1": 2, "q2": 2, "q3": 2, "q4": 3, "q5": 2, "q6": 3, "q7": 2, "q8": 2, "q9": 2}
PROPERTIES = ("no_cross_block_reduction", "no_duplicated_reads", "layout_unchanged")
RERUN = "__rerun__"           # the grader's re-run of steps 6-7 (launchlab.faces.rerun): never a learner's name
RERUN_OF = ("q6", "q7")
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
        "ranking_by_occupancy": [tools.key(r) for r in lab.ranking_by_occupancy(rows)],
        "moved_up": lab.moved_up(lab.ranking_by_occupancy(rows), ranked),
        **fix_references(),
        "head_sites": sorted({s for s, hit in tools.sharded_sites("head") if hit}),
        "gains": {g: data.fix(g).main_ms - data.fix(g).fixed_ms for g in lab.FIX_OF.values()},
    }


def config_key(plan, extra) -> str:
    """An arm as the recording and the re-run name it: its plan (None: main's launch) and its other gates."""
    import json
    return json.dumps([plan, sorted([list(e) for e in extra])])


def fix_references() -> dict:
    """Steps 6-7 from the recording `lab_fix`: every recorded arm's reps (A: the arm, B: main in its ABBA) and
    its cmp against main at each depth; the reference plan's reps and verdict."""
    from launchlab.sections.s09_lab import fix
    d = fix.recorded()
    runs = {config_key(r.plan, r.extra): {"A": r.arm("A"), "B": r.arm("B")} for r in d.runs}
    cmps: dict = {}
    for c in d.cmps:
        cmps.setdefault(config_key(c.plan, c.extra), {})[str(c.depth)] = c.identical
    ref_key = config_key(list(vars(fix.REFERENCE).values()), [])
    a, b = runs[ref_key]["A"], runs[ref_key]["B"]
    lab = reference_module()
    gain, spread = lab.gain_and_spread(b, a)
    return {"fix_runs": runs, "fix_cmps": cmps, "fix_same": {str(c.depth): c.identical for c in d.same},
            "fix_reference": ref_key, "fix_depths": sorted({c.depth for c in d.cmps}),
            "reps_main": b, "reps_fix": a, "gain_ms": gain, "spread_ms": spread, "verdict": lab.verdict(gain, spread),
            "identical_depths": sorted(int(k) for k, v in cmps[ref_key].items() if v),
            "target_blocks": TARGET_BLOCKS}


TARGET_BLOCKS = 66            # step 6: off step 2's list at 7,168 (blocks / SMs >= 50 % of 132)


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
    occ, ranking, offender = a["ranking_by_occupancy"], a["ranking"], a["offender"]
    form = all(isinstance(x, list) and x and all(isinstance(k, str) for k in x) for x in (occ, ranking))
    known = bool(form) and set(ranking) <= set(ref["ranking"]) and set(occ) <= set(ref["ranking"])
    return [(1, known and occ[:3] == ref["ranking_by_occupancy"][:3] and ranking[:3] == ref["ranking"][:3]
             and offender == ranking[0] == ref["ranking"][0],
             "ranking_by_occupancy: by ms x (1 - occupancy), ranking: by ms x (1 - wave_fill), cuBLAS left out, keys "
             "from lab.key(row); the offender is the top of the second"),
            (1, known and a["moved_up"] == ref["moved_up"] and a["why_order_changes"] == "several blocks per SM"
             and ref["fine_kernel"] not in str(offender),
             "moved_up and why_order_changes: which launch does wave fill lift, and what does blocks / SMs not see "
             "about it? (and the kernel that is fine is flagged, not the offender)")]


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


def _axis_lacks(got, right: dict, name: str) -> str:
    """What a learner's entry for one candidate lacks, in their terms -- never the reference's reasoning, nor which
    way a property goes: not a dict, the properties it leaves out, else how many of the three are wrong."""
    if not isinstance(got, dict):
        return f"{name}: not a dict of the three properties"
    missing = [p for p in PROPERTIES if not isinstance(got.get(p), bool)]
    if missing:
        return f"{name}: no True/False for {', '.join(missing)}"
    n = sum(got[p] != right[p] for p in PROPERTIES)
    return f"{name}: {n} of its three properties {'is' if n == 1 else 'are'} not right -- check each against §3-§4"


def q5(a: dict, ref: dict) -> list:
    axes = a["axes"]
    ok = isinstance(axes, dict) and set(axes) == set(ref["axes"]) and all(
        isinstance(axes[n], dict) and {p: axes[n].get(p) for p in PROPERTIES} == ref["axes"][n] for n in ref["axes"])
    wrong = [n for n in ref["axes"] if not (isinstance(axes, dict) and isinstance(axes.get(n), dict)
                                            and {p: axes[n].get(p) for p in PROPERTIES} == ref["axes"][n])]
    why = "; ".join(_axis_lacks(axes.get(n) if isinstance(axes, dict) else None, ref["axes"][n], n) for n in wrong)
    return [(1, ok, "axes: the three properties for each candidate" + (f" ({why})" if why else "")),
            (1, a["offender_fails"] == "no_cross_block_reduction",
             "offender_fails: which property does splitting a norm's row across blocks break?")]


def _widths_message(r: dict) -> str | None:
    """Why the plan fails, at the first width where it does (in the learner's own terms), or None."""
    for n, w in (r.get("widths") or {}).items():
        if w.get("plan") is None:
            return f"at n = {int(n):,} your plan gave no (grid, block, ept): {w.get('error')}"
        if w.get("missed"):
            return f"at n = {int(n):,} your plan {w['plan']} leaves {w['missed']:,} elements unadded"
        if w.get("past_end"):
            return f"at n = {int(n):,} your plan {w['plan']} writes {w['past_end']} elements past the end of h"
        if w.get("error"):
            return f"at n = {int(n):,}: {w['error']}"
    g = r.get("gpu") or {}
    for n, c in (g.get("counted") or {}).items():
        if c.get("error") or c.get("missed") or c.get("past_end") or c.get("wrong"):
            return f"launched on the GPU at n = {int(n):,} between guard words: {c}"
    return None


def _gpu_down(r: dict) -> str | None:
    g = r.get("gpu")
    if g is None:
        return None
    if g.get("status") != "ok":
        return f"the re-run of your step 6 on the GPU did not finish ({g.get('status')})"
    if not g.get("counted"):
        return "the re-run of your step 6 on the GPU gave no plan to launch"
    return None


def _interleaved(order) -> bool:
    """Three pairs, each of one A and one B, the first arm of each pair alternating (ABBAAB or BAABBA)."""
    return order in ("ABBAAB", "BAABBA")


def _arm_key(arm: dict) -> str:
    return config_key(arm.get("plan"), arm.get("extra") or [])


MAIN = config_key(None, [])


def _replayed(r: dict, ref: dict) -> dict | None:
    """What replay serves each arm for the learner's order (launchlab.sections.s09_lab.fix: an arm's recorded reps
    in turn, main's from the ABBA of the learner's plan), or None when an arm was not recorded."""
    arms, order = r.get("arms") or {}, r.get("order")
    if not isinstance(order, str) or not order or any(arms.get(x, {}).get("error") for x in ("A", "B")):
        return None
    mine = config_key(r["widths"][str(7168)]["plan"], []) if r.get("widths", {}).get("7168", {}).get("plan") else None
    served: dict = {}
    out: dict = {"A": [], "B": []}
    for name in order:
        if name not in arms:                      # judged() names only A and B
            return None
        k = _arm_key(arms[name])
        if k == MAIN:
            run = ref["fix_runs"].get(mine)
            reps = (run or ref["fix_runs"][ref["fix_reference"]])["B"]
        elif k in ref["fix_runs"]:
            reps = ref["fix_runs"][k]["A"]
        else:
            return None
        i = served.get(k, 0)
        served[k] = i + 1
        out[name].append(reps[i % len(reps)])
    return out


def _verdict(gain: float, spread: float) -> str:
    """Step 6's rule: faster or slower only when the gap is wider than the spread."""
    return "faster" if gain > spread else "slower" if -gain > spread else "no measurable difference"


def _measured_verdict(r: dict) -> tuple[str, bool] | None:
    """The grader's own ABBA on the GPU: (its verdict, whether the gap is decisive -- beyond three times the
    wider of the reps' range and the control's gap, the noise a fresh capture of main's own shape shows)."""
    import statistics
    g = r.get("gpu") or {}
    ab = g.get("abba")
    if not ab:
        return None
    arm: dict = {"A": [], "B": []}
    for o, m in zip(ab["order"], ab["ms"]):
        arm[o].append(m)
    gain = statistics.median(arm["B"]) - statistics.median(arm["A"])
    spread = max(max(x) - min(x) for x in arm.values())
    noise = max(spread, abs(g.get("control_ms") or 0.0))
    return _verdict(gain, spread), abs(gain) > 3 * noise


def _same(A: dict, B: dict) -> bool:
    """Both arms read (no error) and one configuration: the same plan and the same gates beyond main's."""
    return bool(A) and bool(B) and not A.get("error") and not B.get("error") and _arm_key(A) == _arm_key(B)


def _confounded(A: dict, B: dict) -> str | None:
    """Why step 6 scores nothing for these arms (§6: nothing but the thing under test differs), or None."""
    if _same(A, B):
        return ("arms: A and B are the same configuration, so the A/B measures nothing -- §6: the arms differ in "
                "the one thing under test, your plan (LAUNCHLAB_LAB_ADD=1 against 0)")
    extra = [f"{n} also sets " + ", ".join(f"LAUNCHLAB_{k}={v}" for k, v in arm["extra"])
             for n, arm in (("A", A), ("B", B)) if arm.get("extra")]
    if extra:
        return (f"arms: {'; '.join(extra)} -- a gain would be that gate's as much as your plan's; §6: nothing but "
                f"the thing under test differs between the arms")
    return None


def q6(a: dict, ref: dict) -> list:
    import statistics
    r = a.get("rerun") or {}
    down = _gpu_down(r)
    why = _widths_message(r) if r.get("widths") else (r.get("status") or "your step 6 could not be re-run")
    blocks = r.get("blocks_at_n")
    target = isinstance(blocks, int) and blocks >= ref["target_blocks"]
    p1 = (1, not down and why is None and target,
          down or why or f"at n = 7,168 your plan launches {blocks} blocks: still under step 2's 50 % line "
                         f"({ref['target_blocks']} of the 132 SMs)")
    arms = r.get("arms") or {}
    A, B = arms.get("A") or {}, arms.get("B") or {}
    confounded = _confounded(A, B)
    if confounded:                              # §6's discipline: no credit for an A/B that compares nothing
        return [(1, False, confounded)] * 3
    switches = (not A.get("error") and not B.get("error") and A.get("plan") is not None and B.get("plan") is None)
    order = r.get("order")
    p2 = (1, switches and _interleaved(order),
          ("arms: A must launch your plan (LAUNCHLAB_LAB_ADD=1) and B main's (0)" if not switches else
           f"the ABBA your cells ran went {order!r}: three pairs, one of each arm per pair, the first arm of "
           f"each pair alternating"))
    want = _replayed(r, ref)

    def reps(x, w):
        return (isinstance(x, list) and len(x) == len(w) and all(_number(y) for y in x)
                and all(close(u, v) for u, v in zip(sorted(x), sorted(w))))
    ok = (want is not None and bool(want["A"]) and bool(want["B"]) and reps(a["reps_main"], want["B"])
          and reps(a["reps_fix"], want["A"]))
    if ok:
        gain = statistics.median(want["B"]) - statistics.median(want["A"])
        spread = max(max(want["A"]) - min(want["A"]), max(want["B"]) - min(want["B"]))
        ok = (close(a["gain_ms"], gain, 0.01) and close(a["spread_ms"], spread, 0.01)
              and a["verdict"] == _verdict(gain, spread))
    msg = ("reps_main and reps_fix: each arm's per-rep ms/token as your cells measured them; gain_ms: the median of "
           "main's minus the median of yours; spread_ms: the wider arm's range; verdict: faster or slower only when "
           "the gap is wider than the spread")
    m = _measured_verdict(r)
    if ok and m is not None and m[1] and a["verdict"] != m[0]:
        ok, msg = False, f"the grader's own ABBA of your two arms on the GPU measured {m[0]!r}, decisively"
    if down:
        ok, msg = False, down
    return [p1, p2, (1, ok, msg)]


def _truth(r: dict, ref: dict) -> bool | None:
    """Whether the learner's two arms are byte-identical at every depth: the grader's own cmp on the GPU where
    it ran, else the recording's."""
    g = r.get("gpu") or {}
    if g.get("cmp"):
        return all(v["identical"] for v in g["cmp"].values())
    arms = r.get("arms") or {}
    if any((arms.get(x) or {}).get("error") or not arms.get(x) for x in "AB"):
        return None
    ka, kb = _arm_key(arms["A"]), _arm_key(arms["B"])     # one configuration never gets here (q7 refuses it)
    other = kb if ka == MAIN else ka if kb == MAIN else None
    got = ref["fix_cmps"].get(other)
    return None if not got else all(got.values())


def q7(a: dict, ref: dict) -> list:
    depths = a["depths"]
    form = a["claim"] in ("bit-identical", "not bit-identical") and a["evidence"] == "cmp"
    known = (isinstance(depths, list) and all(type(d) is int for d in depths) and len(set(depths)) >= 2
             and set(depths) <= set(ref["fix_depths"]))
    arms = (a.get("rerun") or {}).get("arms") or {}
    if _same(arms.get("A") or {}, arms.get("B") or {}):         # §7: a cmp of a configuration with itself
        return [(1, form and known, "depths: more than one depth (each one the cmp compared), and the evidence "
                                    "for a bit-identity claim is bytes compared (cmp)"),
                (1, False, "claim: your two arms are one configuration: its cmp with itself is identical by "
                           "construction and shows nothing -- §7: compare the bytes of the two arms you changed")]
    truth = _truth(a.get("rerun") or {}, ref)
    right = truth is not None and a["claim"] == ("bit-identical" if truth else "not bit-identical")
    return [(1, form and known, "depths: more than one depth (each one the cmp compared), and the evidence for a "
                                "bit-identity claim is bytes compared (cmp)"),
            (1, right, "claim: the grader compared your two arms' bytes itself, at every depth"
                       if truth is not None else "claim: your two arms could not be compared (see step 6)")]


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
    if q in RERUN_OF:
        a["rerun"] = answers.get(RERUN)
    try:
        out = [(p, bool(ok), msg) for p, ok, msg in QUESTIONS[q](a, ref)]
    except Exception as e:                       # noqa: BLE001 - an odd answer fails its checks, not the grader
        out = [(POINTS[q], False, f"the answers of {q} could not be read ({type(e).__name__}: {e})")]
    assert sum(p for p, _, _ in out) == POINTS[q], q
    return out
