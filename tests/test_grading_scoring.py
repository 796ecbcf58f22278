"""The lab's scoring and feedback, without the sandbox (issue 27: mutation testing of grading's scoring).

The answers are plain values, as the sandboxed run hands them over: the right ones are the reference values
typed in to 4 significant figures (lab_fixtures.pasted_answers); each wrong answer below loses the points worked
out by hand from the question's checks (lab_solutions/lab_tests.py), on both sides of each tolerance, and the
feedback says which check lost them, word for word."""
import copy

import pytest

from launchlab.faces import grading

t = grading.tests()
fx = grading.fixtures()
REF: dict = {}


@pytest.fixture(autouse=True, scope="module")
def _reference():
    """The reference values, computed in the test run itself (not at import), from the lab's recording."""
    REF.clear()
    REF.update(t.references())
    yield


WIDTHS = (1, 2, 31, 1000, 1001, 2880, 5120, 7168, 7169, 100003)


def right_rerun() -> dict:
    """What the grader's re-run of the master's steps 6-7 finds (launchlab.faces.rerun), written out by hand: the
    plan (ceil(n / 32), 32, 1) covers every width exactly, arm A launches it and B main's, the ABBA ran ABBAAB."""
    plans = {str(n): {"plan": [(n + 31) // 32, 32, 1], "error": None, "missed": 0, "past_end": 0} for n in WIDTHS}
    return {"status": "ok", "widths": plans, "blocks_at_n": 224, "order": "ABBAAB", "errors": [], "gpu": None,
            "arms": {"A": {"env": {"LAUNCHLAB_LAB_ADD": "1"}, "plan": [224, 32, 1], "extra": [], "error": None},
                     "B": {"env": {"LAUNCHLAB_LAB_ADD": "0"}, "plan": None, "extra": [], "error": None}}}


def right() -> dict:
    ns: dict = {}
    exec(fx.pasted_answers(REF), ns)
    ns.pop("__builtins__")
    ns[t.RERUN] = right_rerun()
    return ns


def values() -> dict:
    """The right answers as the runner collects them (the re-run is the grader's, not an answer)."""
    return {k: {"value": v} for k, v in right().items() if k != t.RERUN}


def rerun(**changes):
    """A change to the re-run's facts, for lost(): each key of `changes` a top-level key of the facts."""
    def f(r):
        r = copy.deepcopy(r)
        for k, v in changes.items():
            r[k] = v(r[k]) if callable(v) else v
        return r
    return f


def lost(**changes) -> dict:
    """{question: points lost} when the answers are the right ones with `changes`."""
    a = right()
    for k, v in changes.items():
        a[k] = v(a[k]) if callable(v) else v
    checks = t.score({n: a.get(n) for n in [*grading.answer_names(t), t.RERUN]}, REF)
    return {q: t.POINTS[q] - sum(p for p, ok, _ in c if ok) for q, c in checks.items()
            if sum(p for p, ok, _ in c if ok) != t.POINTS[q]}


def scaled(key: str, rel: float, i: int = 1):
    def f(rows):
        rows = copy.deepcopy(rows)
        rows[i][key] *= 1 + rel
        return rows
    return f


def test_the_right_answers_score_full_marks_and_the_reference_is_what_the_lab_measured():
    g = grading.score({"answers": values()}, REF, t, "ada", rerun_facts=right_rerun())
    assert g.total == g.out_of == 20 and g.status == "ok" and g.learner == "ada"
    assert g.feedback.split("\n") == [f"{q}: {p:g} / {p:g}" for q, p in t.POINTS.items()]
    assert REF["verdict"] == "faster" and REF["flagged"][0] == "decode_ops:add_inplace [28] 256"
    assert REF["fix_same"] == {"2048": True, "131072": True} and REF["fix_reference"] == '[[224, 32, 1], []]'
    g = grading.score({"answers": values()}, REF, t, "ada",
                      rerun_facts=dict(right_rerun(), arms={"A": right_rerun()["arms"]["A"]} | {"B": right_rerun()["arms"]["A"]}))
    # one arm twice (issue 58): an A/B of nothing -- step 6 scores 0 of 3, step 7's identity claim 0 (its cmp
    # compares one configuration with itself); the depths and evidence point stays
    assert (g.points["q6"], g.points["q7"]) == (0.0, 1.0)
    assert "the same configuration" in g.feedback and "§6" in g.feedback and "§7" in g.feedback
    assert REF["ranking"][:3] == ["rms_norm:rms_norm_f32 [1] 128", "mla_decode:mla_split [129, 1, 1] 128",
                                  "kda_decode:kda_walk<0> [1, 12] 128"]


@pytest.mark.parametrize("changes, want", [
    # q1: the table
    (dict(table=lambda rows: rows[1:]), {"q1": 2, "q2": 1}),                 # a row dropped: q2 checks every row
    (dict(table=scaled("ms_per_token", 2e-3)), {"q1": 1}),                  # one row's time 0.2 % off
    (dict(table=scaled("ms_per_token", 5e-4)), {}),                         # 0.05 %: inside 1e-3
    (dict(table=scaled("ms_per_token", -2e-3)), {"q1": 1}),                 # too small counts too
    (dict(table=lambda rows: [dict(r, calls=r["calls"] + (i == 1)) for i, r in enumerate(rows)]), {"q1": 2}),
    (dict(table=lambda rows: [{k: v for k, v in r.items() if k != "calls"} for r in rows]), {"q1": 2}),
    (dict(table="a table"), {"q1": 2, "q2": 1}),
    (dict(table=[]), {"q1": 2, "q2": 1}),
    # q2: occupancy, wave fill, flagged
    (dict(table=scaled("occupancy", 2e-3)), {"q2": 1}),
    (dict(table=scaled("wave_fill", -2e-3)), {"q2": 1}),
    (dict(table=lambda rows: [dict(r, occupancy=None) if i == 1 else r for i, r in enumerate(rows)]), {"q2": 1}),
    (dict(table=lambda rows: [dict(r, occupancy=0.5) if i == 0 else r for i, r in enumerate(rows)]), {"q2": 1}),
    (dict(flagged=lambda f: f[1:]), {"q2": 1}),
    (dict(flagged=lambda f: list(reversed(f))), {}),                        # the order does not matter
    (dict(flagged="all of them"), {"q2": 1}),
    # q3: the lecture's ranking, the wave-fill ranking, the offender, what moved and why
    (dict(ranking=lambda r: [r[1], r[0]] + r[2:]), {"q3": 1}),              # and the offender is not its top
    (dict(ranking=lambda r: r[:2] + [r[3], r[2]] + r[4:]), {"q3": 1}),
    (dict(ranking=lambda r: r[:3]), {}),                                    # the top three are what counts
    (dict(ranking=[1, 2, 3]), {"q3": 2}),
    (dict(ranking=[]), {"q3": 2}),
    (dict(ranking_by_occupancy=lambda r: [r[1], r[0]] + r[2:]), {"q3": 1}),
    (dict(ranking_by_occupancy=lambda r: r[:3]), {}),
    (dict(ranking_by_occupancy=lambda r: ["made_up [1] 1"] + r), {"q3": 2}),
    (dict(moved_up="decode_ops:add_inplace [28] 256"), {"q3": 1}),
    (dict(why_order_changes="timing noise"), {"q3": 1}), (dict(why_order_changes="launch count"), {"q3": 1}),
    (dict(offender="mla_decode:mla_split [129, 1, 1] 128"), {"q3": 1}),   # no byte count: q4 reads the top
    (dict(offender="kda_decode:kda_walk<0> [1, 12] 128"), {"q3": 1, "q4": 2}),   # q4 follows this offender
    (dict(offender="decode_ops:kda_prep [12] 128"), {"q3": 2, "q4": 2}),   # the fine one, as the offender
    # q4: the diagnosis of the offender
    (dict(floor_us=lambda v: v * 1.06), {"q4": 1}), (dict(floor_us=lambda v: v * 1.04), {}),
    (dict(floor_us=lambda v: v * 0.94), {"q4": 1}),
    (dict(measured_us=lambda v: v * 1.02), {"q4": 1}), (dict(measured_us=lambda v: v * 1.005), {}),
    (dict(ratio=lambda v: v * 0.94), {"q4": 1}), (dict(ratio=lambda v: v * 1.04), {}),
    (dict(spread_pct=lambda v: v + 0.05 + 0.1 * v + 0.01), {"q4": 1}),
    (dict(spread_pct=lambda v: v - 0.05 - 0.1 * v - 0.01), {"q4": 1}),
    (dict(spread_pct=lambda v: v + 0.05 + 0.1 * v - 0.01), {}),
    (dict(spread_pct=True), {"q4": 1}), (dict(spread_pct="0.34"), {"q4": 1}),
    (dict(diagnosis="contention"), {"q4": 1}),
    (dict(ruled_out=["arithmetic"]), {"q4": 1}), (dict(ruled_out=["arithmetic", "contention"]), {}),
    (dict(ruled_out="contention, arithmetic"), {"q4": 1}), (dict(ruled_out=["contention", 1]), {"q4": 1}),
    (dict(floor_us=True), {"q4": 1}),
    # q5: the axes
    (dict(axes=lambda a: dict(a, rms_norm=dict(a["rms_norm"], no_cross_block_reduction=True))), {"q5": 1}),
    (dict(axes=lambda a: {k: v for k, v in a.items() if k != "kda_step"}), {"q5": 1}),
    (dict(axes=lambda a: dict(a, extra={})), {"q5": 1}),
    (dict(axes=lambda a: dict(a, kda_step="yes")), {"q5": 1}),
    (dict(axes=lambda a: {k: dict(v, note="mine") for k, v in a.items()}), {}),   # extra keys are ignored
    (dict(offender_fails="layout_unchanged"), {"q5": 1}),
    # q6: the ABBA
    (dict(reps_main=lambda r: [r[0] * 1.01] + r[1:]), {"q6": 1}),
    (dict(reps_fix=lambda r: r[:2]), {"q6": 1}),
    (dict(reps_fix=lambda r: list(reversed(r))), {}),
    (dict(reps_main=lambda r: r + ["x"]), {"q6": 1}),
    (dict(gain_ms=lambda v: v * 1.02), {"q6": 1}), (dict(gain_ms=lambda v: v * 0.98), {"q6": 1}),
    (dict(spread_ms=lambda v: v * 1.02), {"q6": 1}),
    (dict(verdict="slower"), {"q6": 1}), (dict(verdict="better"), {"q6": 1}),
    # q6: the grader's re-run of step 6 -- coverage at every width, the target, the gate, the order
    (dict(__rerun__=rerun(widths=lambda w: dict(w, **{"1001": dict(w["1001"], missed=9)}))), {"q6": 1}),
    (dict(__rerun__=rerun(widths=lambda w: dict(w, **{"1": dict(w["1"], past_end=1)}))), {"q6": 1}),
    (dict(__rerun__=rerun(widths=lambda w: dict(w, **{"2": dict(w["2"], plan=None, error="raised")}))), {"q6": 1}),
    (dict(__rerun__=rerun(blocks_at_n=65)), {"q6": 1}), (dict(__rerun__=rerun(blocks_at_n=66)), {}),
    (dict(__rerun__=rerun(arms=lambda a: dict(a, B=dict(a["A"])))), {"q6": 3, "q7": 1}),   # B is A: nothing differs
    (dict(__rerun__=rerun(arms=lambda a: dict(a, A=dict(a["B"])))), {"q6": 3, "q7": 1}),   # A is main: the same
    (dict(__rerun__=rerun(arms=lambda a: dict(a, A=dict(a["B"]), B=dict(a["A"])))), {"q6": 2}),   # swapped: no fix
    (dict(__rerun__=rerun(arms=lambda a: dict(a, B=dict(a["B"], error="bad gate")))), {"q6": 2, "q7": 1}),
    (dict(__rerun__=rerun(order="AAABBB")), {"q6": 1}), (dict(__rerun__=rerun(order="BAABBA")), {}),
    (dict(__rerun__=rerun(order="ABABAB")), {"q6": 1}),
    (dict(__rerun__=rerun(order="ABBA")), {"q6": 2}),                      # two reps each were measured, not three
    (dict(__rerun__=None), {"q6": 3, "q7": 1}),
    (dict(__rerun__=rerun(gpu={"status": "timeout: stopped after 45 s"})), {"q6": 2}),
    # q7: the bit-identity claim
    (dict(claim="not bit-identical"), {"q7": 1}), (dict(claim="identical"), {"q7": 2}),
    (dict(evidence="tolerance"), {"q7": 1}), (dict(evidence="allclose"), {"q7": 1}),
    (dict(__rerun__=rerun(arms=lambda a: dict(a, A=dict(a["A"], extra=[["MLA_FLOOR", "derived"]])))),
     {"q6": 3, "q7": 1}),              # two things changed (issue 58: §6), and its bytes move at 131,072
    (dict(__rerun__=rerun(arms=lambda a: dict(a, B=dict(a["B"], extra=[["PDL", "0"]])))),
     {"q6": 3, "q7": 1}),              # a second gate in main's arm is a second change too; its cmp was not recorded
    (dict(depths=[2048]), {"q7": 1}), (dict(depths=[2048, 2048]), {"q7": 1}),
    (dict(depths=[2048, 8192]), {"q7": 1}), (dict(depths="2048, 131072"), {"q7": 1}),
    # q8: the head-derived sites
    (dict(head_sites=lambda s: [x for x in s if "kda_heads" not in x]), {"q8": 2}),   # the fine one left off
    (dict(head_sites=lambda s: s[1:]), {"q8": 1}),                          # the rope pack (in _attend) left off
    (dict(head_sites=lambda s: s[:-1]), {"q8": 1}),
    (dict(head_sites="kernels/decode.py"), {"q8": 2}),
    (dict(fine_site="kernels/decode.py:_attend grid=(c.mla_heads + 1,)"), {"q8": 1}),
    (dict(fine_site="kernels/decode.py:step grid=(c.kda_heads,)"), {}),       # the lab's own format
    # q9
    (dict(largest_measured="RMS_WIDE"), {"q9": 1}), (dict(why_differ="noise"), {"q9": 1}),
])
def test_each_wrong_answer_loses_exactly_its_points(changes, want):
    assert lost(**changes) == want


def test_each_checks_message_is_what_the_learner_reads():
    a = right()
    a.update(verdict="better", depths=[2048], why_differ="noise")
    checks = t.score(a, REF)
    failed = {q: [m for p, ok, m in c if not ok] for q, c in checks.items() if any(not ok for _, ok, _ in c)}
    assert failed == {
        "q6": [MESSAGES["q6"][2]],
        "q7": [MESSAGES["q7"][0]],
        "q9": ["why_differ: the spreads are a few microseconds and the column is the right one -- what does idle "
               "SM-time say about what a fix can win?"]}
    axes = dict(right()["axes"], mla_split={"no_cross_block_reduction": True, "no_duplicated_reads": True,
                                            "layout_unchanged": True})
    (_, ok, msg), _ = t.q5({"axes": axes, "offender_fails": "no_cross_block_reduction"}, REF)
    assert not ok and msg == ("axes: the three properties for each candidate (mla_split: 1 of its three properties "
                              "is not right -- check each against §3-§4)")
    assert REF["axes_why"]["mla_split"][:30] not in msg                  # the reference's reasoning is never quoted
    axes = dict(right()["axes"], rms_norm={"no_cross_block_reduction": True, "no_duplicated_reads": False,
                                           "layout_unchanged": True},
                kda_step={"no_cross_block_reduction": True}, mla_split=[True, False, True])
    (_, ok, msg), _ = t.q5({"axes": axes, "offender_fails": "no_cross_block_reduction"}, REF)
    assert not ok and msg == ("axes: the three properties for each candidate (rms_norm: 2 of its three properties "
                              "are not right -- check each against §3-§4; kda_step: no True/False for "
                              "no_duplicated_reads, layout_unchanged; mla_split: not a dict of the three properties)")
    assert not any(REF["axes_why"][n][:30] in msg for n in REF["axes_why"])
    (_, ok, msg), _ = t.q5({"axes": "all fine", "offender_fails": "x"}, REF)
    assert not ok and msg.count("not a dict of the three properties") == 3


def test_an_answer_a_check_cannot_read_costs_its_question_and_says_why(monkeypatch):
    def q8(a, ref):                                     # a check that meets an answer it cannot read
        raise TypeError("unhashable type: 'list'")
    monkeypatch.setitem(t.QUESTIONS, "q8", q8)
    checks = t.score(right(), REF)
    assert checks["q8"] == [(2, False, "the answers of q8 could not be read (TypeError: unhashable type: 'list')")]
    assert all(ok for q in t.QUESTIONS if q != "q8" for _, ok, _ in checks[q])


def test_plain_answers_and_missing_ones():
    values, missing = grading._plain_answers({"answers": {
        "x": {"value": 1}, "y": {"__missing__": "not answered yet"}, "z": 5, "w": {"other": 1},
        "v": {"value": None}}})
    assert values == {"x": 1, "v": None}
    assert missing == {"y": "not answered yet", "z": "not an answer", "w": "not an answer"}
    assert grading._plain_answers({}) == ({}, {}) and grading._plain_answers({"answers": None}) == ({}, {})


def test_feedback_for_a_blank_a_raising_and_a_timed_out_step():
    collected = {"answers": {"table": {"__missing__": "not answered yet"}},
                 "events": [{"step": "q1", "error": "RuntimeError", "message": "unfinished"},
                            {"step": "q5", "error": "timeout", "message": "ran past its time limit (15 s)"},
                            {"step": "q2", "error": "ValueError", "message": "not this one"}]}
    g = grading.score(collected, REF, t, "bob")
    assert g.total == 0 and g.out_of == 20 and g.points == {q: 0.0 for q in t.QUESTIONS}
    fb = g.feedback.split("\n")
    q1 = fb[:fb.index("q2: 0 / 2")]
    assert q1 == ["q1: 0 / 2", "  `table` not answered yet", "  your cell raised RuntimeError: unfinished",
                  "  lost 1: " + t.q1({"table": None}, REF)[0][2], "  lost 1: " + t.q1({"table": None}, REF)[1][2]]
    assert "  a cell of this step ran past its time limit (15 s)" in fb
    assert "  `offender` not defined (the notebook stopped before it, or never assigned it)" in fb
    assert "passed" not in g.feedback and "  FAILED (1): " in g.report and g.report.endswith("answers: {}")


def test_a_run_that_failed_is_scored_zero_with_its_status():
    g = grading.score("timeout after 600 s", REF, t, "cy")
    assert g.status == "timeout after 600 s" and g.total == 0 and g.out_of == 20
    full = grading.score({"answers": values()}, REF, t, rerun_facts=right_rerun())
    assert full.status == "ok" and "  passed (1): " in full.report and full.points["q4"] == 3.0


def test_the_points_add_up_and_every_answer_name_is_asked():
    assert sum(t.POINTS.values()) == 20 and set(t.POINTS) == set(t.QUESTIONS) == set(t.ANSWERS)
    assert grading.answer_names(t) == sorted({n for names in t.ANSWERS.values() for n in names})
    assert len(grading.answer_names(t)) == 27 and t.RERUN not in grading.answer_names(t)


def test_the_reference_values_worked_out_apart_from_lab_tests():
    """references() against the lab's recording read here directly, and the lab's facts: the right answers of
    the scoring tests above come from it, so it is checked on its own."""
    import json
    import statistics
    from pathlib import Path

    from launchlab.core import diagnosis
    REF = t.references()                      # computed in this test: a mutant of it reaches this test
    raw = json.loads((Path(__file__).resolve().parent.parent / "data" / "recordings" / "lab.json").read_text())
    lab = raw["data"]["lab"]

    def arm_ms(fix, which):                       # A = the fix, B = main; each rep's median, in ms
        ab = fix["abba"]
        return [statistics.median(r["reps_us"]) / 1e3 for o, r in zip(ab["order"], ab["results"]) if o == which]
    fixes = {f["gate"]: f for f in lab["fixes"]}
    fx_rec = json.loads((Path(__file__).resolve().parent.parent / "data" / "recordings" / "lab_fix.json").read_text())
    run = next(r for r in fx_rec["data"]["lab_fix"]["runs"] if r["plan"] == [224, 32, 1] and not r["extra"])
    a = [m for o, m in zip(run["order"], run["ms"]) if o == "A"]
    b = [m for o, m in zip(run["order"], run["ms"]) if o == "B"]
    assert run["order"] == ["A", "B", "B", "A", "A", "B"]
    assert REF["reps_main"] == b and REF["reps_fix"] == a and len(a) == 3
    assert REF["gain_ms"] == statistics.median(b) - statistics.median(a)
    assert REF["spread_ms"] == max(max(a) - min(a), max(b) - min(b))
    assert REF["verdict"] == ("faster" if REF["gain_ms"] > REF["spread_ms"] else "slower"
                              if -REF["gain_ms"] > REF["spread_ms"] else "no measurable difference")
    assert len(REF["fix_runs"]) == 33 and REF["fix_depths"] == [2048, 131072] and REF["target_blocks"] == 66
    moved = REF["fix_cmps"]['[[224, 32, 1], [["MLA_FLOOR", "derived"]]]']
    assert moved == {"2048": True, "131072": False}
    assert REF["ranking_by_occupancy"][:3] == ["rms_norm:rms_norm_f32 [1] 128", "kda_decode:kda_walk<0> [1, 12] 128",
                                               "decode_ops:add_inplace [28] 256"]
    assert REF["moved_up"] == "mla_decode:mla_split [129, 1, 1] 128"
    assert REF["gains"] == {g: statistics.median(arm_ms(fixes[g], "B")) - statistics.median(arm_ms(fixes[g], "A"))
                            for g in ("RMS_WIDE", "MLA_FLOOR", "KDA_VT")}
    assert REF["identical_depths"] == [2048, 131072] and REF["fine_kernel"] == "decode_ops:kda_prep"
    assert REF["head_sites"] == ["kernels/decode.py:_attend grid=(c.mla_heads + 1,)",
                                 "kernels/decode.py:step grid=(c.kda_heads,)", "kernels/decode.py:step grid=n",
                                 "kernels/kda_contrast.py:step grid=p.grid", "kernels/kda_decode.py:step grid=p.grid",
                                 "kernels/mla.py:combine grid=p.combine_grid", "kernels/mla.py:split grid=p.grid"]
    assert REF["axes"] == {"rms_norm": {"no_cross_block_reduction": False, "no_duplicated_reads": True,
                                        "layout_unchanged": True},
                           "kda_step": {"no_cross_block_reduction": True, "no_duplicated_reads": True,
                                        "layout_unchanged": True},
                           "mla_split": {"no_cross_block_reduction": False, "no_duplicated_reads": True,
                                         "layout_unchanged": True}}
    assert set(REF["axes_why"]) == set(REF["axes"]) and all(len(w) > 40 for w in REF["axes_why"].values())
    # the table: every launch of the step once, occupancy blocks / 132 at most 1, None for cuBLAS
    assert sum(r["calls"] for r in REF["table"]) == 1729 and set(REF["table"][0]) == {
        "kernel", "grid", "block", "calls", "ms_per_token", "occupancy", "wave_fill"}
    for r in REF["table"]:
        if r["grid"] is None:
            assert r["occupancy"] is None and r["wave_fill"] is None
        else:
            blocks = 1
            for g in r["grid"]:
                blocks *= g
            assert r["occupancy"] == min(blocks, 132) / 132 and 0 < r["wave_fill"] <= r["occupancy"]
    flagged = sorted(f"{r['kernel']} {r['grid']} {r['block']}" for r in REF["table"]
                     if r["occupancy"] is not None and r["occupancy"] < 0.5)
    assert REF["flagged"] == flagged and len(flagged) >= 10
    # the offender's diagnosis: 3 x 7,168 x 4 B at the recorded copy bandwidth, plus one launch
    d = REF["diagnoses"]["rms_norm:rms_norm_f32 [1] 128"]
    assert d["floor_us"] == pytest.approx(86016 / (lab["copy_tbs"] * 1e6) + lab["launch_us"], rel=1e-12)
    reps = max((r for r in lab["profile"]["rows"] if r["kernel"] == "rms_norm:rms_norm_f32"
                and list(r["grid"]) == [1] and r["block"] == 128), key=lambda r: r["calls"])["reps_us"]
    assert d["measured_us"] == statistics.median(reps) and d["ratio"] == d["measured_us"] / d["floor_us"]
    assert d["spread_pct"] == pytest.approx(100 * diagnosis.robust_spread(reps), rel=1e-12)
    assert set(REF["diagnoses"]) <= set(REF["ranking"]) and "mla_decode:mla_split [129, 1, 1] 128" not in REF[
        "diagnoses"]


def test_a_full_step_shows_no_error_lines_and_the_report_keeps_4000_characters_of_answers():
    answers = {"answers": values(),
               "events": [{"step": "q6", "error": "RuntimeError", "message": "after the answers"}]}
    g = grading.score(answers, REF, t, rerun_facts=right_rerun())
    assert g.learner == "" and g.total == 20 and "your cell raised" not in g.feedback
    head, tail = g.report.split("\n\nanswers: ")
    assert head.split("\n")[:3] == ["q1: 2 / 2", "  passed (1): " + t.q1({"table": None}, REF)[0][2],
                                    "  passed (1): " + t.q1({"table": None}, REF)[1][2]]
    assert len(tail) == 4000 and tail.startswith('{"table": [{"kernel": "cublas:gemmEx"')


def test_the_instructors_files_load_under_their_own_names_or_refuse(tmp_path):
    assert grading.reference().__name__ == "lab_solutions.lab_reference"
    assert grading.tests().__name__ == "lab_solutions.lab_tests"
    assert grading.fixtures().__name__ == "lab_solutions.lab_fixtures"
    assert t.reference_module().__name__ == "lab_solutions.lab_reference"
    assert grading.reference().__file__ == str(grading.ROOT / "lab_solutions" / "lab_reference.py")
    assert grading.fixtures().__file__ == str(grading.FIXTURES_FILE) and grading.tests().__file__ == str(grading.TESTS)
    with pytest.raises(grading.GradingError) as e:
        grading._instructor(tmp_path / "nope.py", "x")
    assert str(e.value) == (f"{tmp_path / 'nope.py'} is not here: grading needs the instructor's tree, not a learner "
                            f"release")


MESSAGES = {
    "q1": ["table: one dict per launch shape of the step with kernel, grid, block, calls and ms_per_token, whose "
           "calls add up to every launch of the step",
           "table: one row per (kernel, grid, block), its calls and ms per token summed over the roles that share the "
           "shape"],
    "q2": ["occupancy: blocks / SMs at most 1 (blocks = the product of the grid), and wave_fill: blocks / (SMs x the "
           "kernel's resident blocks per SM) at most 1; None exactly for cuBLAS's rows",
           "flagged: every row under 50 % occupancy, the fine ones too, named by lab.key(row)"],
    "q3": ["ranking_by_occupancy: by ms x (1 - occupancy), ranking: by ms x (1 - wave_fill), cuBLAS left out, keys "
           "from lab.key(row); the offender is the top of the second",
           "moved_up and why_order_changes: which launch does wave fill lift, and what does blocks / SMs not see "
           "about it? (and the kernel that is fine is flagged, not the offender)"],
    "q4": ["floor_us (bytes / bandwidth + a launch), measured_us (the median of the row's reps) and their ratio, for "
           "your offender",
           "spread_pct: a median needs its spread -- the robust spread over the reps, in %",
           "diagnosis: far off its floor and tight over the reps -- which alternatives does that rule out?"],
    "q5": ["axes: the three properties for each candidate (rms_norm: not a dict of the three properties; kda_step: "
           "not a dict of the three properties; mla_split: not a dict of the three properties)",
           "offender_fails: which property does splitting a norm's row across blocks break?"],
    "q6": ["your step 6 could not be re-run",
           "arms: A must launch your plan (LAUNCHLAB_LAB_ADD=1) and B main's (0)",
           "reps_main and reps_fix: each arm's per-rep ms/token as your cells measured them; gain_ms: the median of "
           "main's minus the median of yours; spread_ms: the wider arm's range; verdict: faster or slower only when "
           "the gap is wider than the spread"],
    "q7": ["depths: more than one depth (each one the cmp compared), and the evidence for a bit-identity claim is "
           "bytes compared (cmp)",
           "claim: your two arms could not be compared (see step 6)"],
    "q8": ["fine_site: main's KDA geometry that is fine (kda_prep: grid = n_head, 2 us a call), on head_sites too",
           "head_sites: every launch whose grid derives from a head count"],
    "q9": ["largest_measured: the gate whose ABBA gained the most ms/token",
           "why_differ: the spreads are a few microseconds and the column is the right one -- what does idle "
           "SM-time say about what a fix can win?"]}


def test_every_check_says_what_the_learner_reads_word_for_word():
    blank = {n: None for n in grading.answer_names(t)}
    blank["table"] = []
    checks = t.score(blank, REF)
    assert {q: [m for _, _, m in c] for q, c in checks.items()} == MESSAGES
    assert all(not ok for c in checks.values() for _, ok, _ in c)
    assert {q: [p for p, _, _ in c] for q, c in checks.items()} == {
        "q1": [1, 1], "q2": [1, 1], "q3": [1, 1], "q4": [1, 1, 1], "q5": [1, 1], "q6": [1, 1, 1], "q7": [1, 1],
        "q8": [1, 1], "q9": [1, 1]}


@pytest.mark.parametrize("changes, want", [
    (dict(table=lambda rows: [{k: r[k] for k in ("kernel", "grid", "block", "calls", "ms_per_token")}
                              for r in rows]), {"q2": 1}),                 # exactly the five keys: q1 is whole
    (dict(table=lambda rows: [dict(r, block=r["block"] * 2) if i == 1 else r for i, r in enumerate(rows)]),
     {"q1": 2, "q2": 1}),                                   # a row's block wrong: a shape the step has not
                                                                            # (q1's form) and the right one missing
    (dict(ranking=lambda r: [r[0], 2, 3]), {"q3": 2}),                      # not all keys: the form fails
])
def test_the_forms_a_check_reads(changes, want):
    assert lost(**changes) == want


def test_rows_that_are_not_dicts_fail_the_form_not_the_grader():
    a = right()
    a["table"] = [1, 2]
    checks = t.score(a, REF)
    assert checks["q1"] == [(1, False, MESSAGES["q1"][0]), (1, False, MESSAGES["q1"][1])]
    assert checks["q2"][0] == (1, False, MESSAGES["q2"][0])


def test_the_tolerance_is_inclusive():
    assert t.close(1001.0, 1000.0) and not t.close(1001.0001, 1000.0)        # 1e-3 of 1,000 is exactly 1.0
    assert t.close(-999.0, -1000.0) and not t.close(True, 1.0) and not t.close(1.0, "1.0")
    assert t.close(1e-16, 0.0) and not t.close(1e-14, 0.0)                     # near zero: 1e-3 of 1e-12


def test_the_identical_depths_are_the_norm_fixes_own(monkeypatch):
    """In the recording every fix is bit-identical at both depths; with one of the other fix's cases made
    different, the norm's depths must not move (they are RMS_WIDE's cases only)."""
    import dataclasses
    from launchlab.sections.s09_lab import lab as tools
    d = tools.recorded()
    other = [c for c in d.cmp if c.fix != "RMS_WIDE"]
    assert other and all(c.identical for c in d.cmp)
    changed = [dataclasses.replace(c, identical=False) if c is other[0] else c for c in d.cmp]
    monkeypatch.setattr(tools, "recorded", lambda: dataclasses.replace(d, cmp=changed))
    r = t.references()
    assert r["identical_depths"] == [2048, 131072]
    assert "kda_decode:kda_walk<0> [1, 12] 128" in r["diagnoses"]            # after mla_split, which has no count


@pytest.mark.parametrize("changes, want", [
    (dict(offender=["rms_norm:rms_norm_f32 [1] 128"]), {"q3": 1}),        # not a key: q4 reads the top instead
    (dict(verdict="no measurable difference"), {"q6": 1}),                 # a verdict of the form, not the right one
    (dict(gain_ms=lambda v: v * 1.005), {}), (dict(spread_ms=lambda v: v * 1.005), {}),   # 1 % tolerance here
])
def test_more_forms_and_tolerances(changes, want):
    assert lost(**changes) == want


def test_the_spread_tolerance_is_inclusive_at_its_exact_edge():
    import numpy as np
    d = REF["diagnoses"]["rms_norm:rms_norm_f32 [1] 128"]["spread_pct"]
    tol = 0.05 + 0.1 * d
    edge = next(x for x in (d + tol, np.nextafter(d + tol, 0), np.nextafter(d + tol, 1)) if abs(x - d) == tol)
    assert lost(spread_pct=float(edge)) == {}
    assert lost(spread_pct=float(np.nextafter(edge, 1))) == {"q4": 1}


def test_a_passing_axes_check_names_no_axis():
    checks = t.score(right(), REF)
    assert checks["q5"][0] == (1, True, "axes: the three properties for each candidate")


@pytest.mark.parametrize("site, want", [
    ("kernels/decode.py:step grid=(c.kda_heads,)", "decode.py:step:(c.kda_heads,)"),
    ("launchlab/kernels/decode.py step()  grid = (c.mla_heads + 1,)", "decode.py:step:(c.mla_heads+1,)"),
    ("mla.py:split grid=p.grid", "mla.py:split:p.grid"),
    ("not a site", "not a site"),
])
def test_a_site_in_either_format(site, want):
    assert t._site(site) == want


def test_no_knowledge_earns_nothing_and_no_expected_value_is_echoed():
    """Issue 37: answers of the right forms with made-up values -- one made-up table row, one made-up ranking key,
    reps that are not numbers, one made-up site -- score 0, and no feedback line carries a reference figure."""
    made_up = {"table": [{"kernel": "k", "grid": [1], "block": 1, "calls": 1, "ms_per_token": 1.0,
                          "occupancy": 0.1, "wave_fill": 0.1}],
               "flagged": ["k [1] 1"], "ranking": ["k [1] 1"], "offender": "k [1] 1", "floor_us": 1.0,
               "measured_us": 2.0, "ratio": 2.0, "spread_pct": 1.0, "diagnosis": "contention", "ruled_out": ["x"],
               "axes": {}, "offender_fails": "none", "reps_main": [None] * 3, "reps_fix": [None] * 3,
               "gain_ms": 0.0, "spread_ms": 0.0, "verdict": "faster", "claim": "bit-identical",
               "evidence": "tolerance", "depths": [1, 2], "head_sites": ["x.py:f grid=n"], "fine_site": "x.py:f grid=n",
               "largest_measured": "X", "why_differ": "noise"}
    checks = t.score(made_up, REF)
    assert {q: sum(p for p, ok, _ in c if ok) for q, c in checks.items()} == {q: 0 for q in t.QUESTIONS}
    text = " ".join(m for c in checks.values() for _, _, m in c)
    assert "1,729" not in text and "1729" not in text


@pytest.mark.parametrize("changes, want", [
    (dict(table=lambda rows: rows + [dict(rows[0], kernel="made_up")]), {"q1": 2, "q2": 1}),   # a row made up
    (dict(ranking=lambda r: ["made_up [1] 1"] + r), {"q3": 2}),
    (dict(reps_main=lambda r: [None, r[1], r[2]]), {"q6": 1}),
    (dict(head_sites=lambda s: ["x" * 60000]), {"q8": 2}),
    (dict(head_sites=lambda s: s * 10), {"q8": 2}),                                 # 70 sites: over the bound
    (dict(why_differ="y" * 70000), {"q9": 2}),                                      # too long to be an answer
])
def test_answers_that_add_or_inflate_lose_their_points(changes, want):
    assert lost(**changes) == want


def test_a_long_site_is_matched_in_bounded_time():
    import time
    t0 = time.perf_counter()
    for _ in range(64):
        t._site("a/" * 30000 + ".py")
    assert time.perf_counter() - t0 < 2.0


def test_q1_first_point_needs_the_steps_own_shapes_not_just_the_call_total():
    """The call total (1,729, worked out from the recording in test_the_reference_values...) is printed in the
    lecture; a made-up row that carries it earns nothing. The step's real shapes with their calls but wrong
    times keep the first point and lose the second; one shape dropped, or one made up beside them, loses both."""
    real = [dict(r) for r in REF["table"]]
    made_up = [{"kernel": "made_up", "grid": "(1,)", "block": 256, "calls": 1729, "ms_per_token": 1.0}]
    assert [ok for _, ok, _ in t.q1({"table": made_up}, REF)] == [False, False]
    slow = [dict(r, ms_per_token=2 * r["ms_per_token"]) for r in real]
    assert [ok for _, ok, _ in t.q1({"table": slow}, REF)] == [True, False]
    assert [ok for _, ok, _ in t.q1({"table": real}, REF)] == [True, True]
    assert [ok for _, ok, _ in t.q1({"table": real[1:]}, REF)] == [False, False]
    extra = real + [dict(made_up[0], calls=0)]
    assert [ok for _, ok, _ in t.q1({"table": extra}, REF)] == [False, False]
    floats = [dict(r, calls=float(r["calls"])) for r in real]          # 3.0 calls is not a count
    assert [ok for _, ok, _ in t.q1({"table": floats}, REF)][0] is False


def test_the_checks_scored_are_the_ones_passed_in():
    """grade_one scores through checks_isolated; score() must use the check it is given, not its own."""
    def every_first_check_passes(answers, ref):
        return {q: [(p, i == 0, m) for i, (p, _, m) in enumerate(c)] for q, c in t.score(answers, ref).items()}
    g = grading.score({"answers": {}}, REF, t, "ada", check=every_first_check_passes)
    assert g.points == {q: float(c[0][0]) for q, c in t.score({n: None for n in grading.answer_names(t)},
                                                                 REF).items()}
    assert grading.score({"answers": {}}, REF, t).total == 0


def test_answers_nobody_asked_for_and_odd_events_are_not_read():
    """The submission can write to the answers channel: a name no question asks for is not reported, events
    that are not a list of dicts are ignored, and an event's text is cut to 300 characters."""
    collected = {"answers": {**values(), "extra": {"value": "x" * 50}, t.RERUN: {"value": right_rerun()}},
                 "events": [1, "two", {"step": "q1", "error": "E", "message": "m" * 1000}]}
    assert grading.score(collected, REF, t).total == 16          # a re-run passed as an answer is not read
    g = grading.score(collected, REF, t, rerun_facts=right_rerun())
    assert g.total == 20 and '"extra"' not in g.report
    assert grading.score({"answers": {}, "events": "not a list"}, REF, t).total == 0
    bad = grading.score({"answers": {}, "events": [{"step": "q1", "error": "E", "message": "m" * 1000}]}, REF, t)
    assert "  your cell raised E: " + "m" * 300 + "\n" in bad.feedback + "\n"


def test_isolated_scoring_agrees_and_is_bounded_in_time():
    """The checks in a process of their own (launchlab/faces/scoring.py) give what t.score gives here; with no
    time at all, every question says it did not finish, and nothing is awarded."""
    a = right()
    assert grading.checks_isolated(a, REF) == {q: [(float(p), ok, m) for p, ok, m in c]
                                               for q, c in t.score(a, REF).items()}
    late = grading.checks_isolated(a, REF, timeout=0.001)
    assert all(len(c) == 1 and not c[0][1] and "did not finish within" in c[0][2] for c in late.values())
    assert sum(c[0][0] for c in late.values()) == 20


def test_plain_answers_of_a_channel_that_is_not_an_object_are_none():
    assert grading._plain_answers([1, 2]) == ({}, {}) and grading._plain_answers("answers") == ({}, {})
    assert grading._plain_answers(None) == ({}, {})
    _, missing = grading._plain_answers({"answers": {"x": {"__missing__": "y" * 300}}})
    assert missing == {"x": "y" * 200}                                  # a reason is cut to 200 characters


def test_a_run_is_scored_from_what_the_runner_collected():
    """grade_one hands score() a runner.Collected: its answers, its events, its status and its log."""
    c = grading.runner.Collected(answers=values(), status="ok (kept)", log=b"printed")
    g = grading.score(c, REF, t, "ada", rerun_facts=right_rerun())
    assert g.total == 20 and g.status == "ok (kept)" and g.log == b"printed"
    c = grading.runner.Collected(answers={"table": {"__missing__": "not answered yet"}},
                                 events=[{"step": "q1", "error": "ValueError", "message": "bad"}], status="timeout")
    g = grading.score(c, REF, t)
    assert g.total == 0 and g.status == "timeout"
    assert "  `table` not answered yet" in g.feedback and "  your cell raised ValueError: bad" in g.feedback


def test_an_event_is_worded_from_what_it_has_and_cut_to_length():
    def feedback(event):
        return grading.score({"answers": {}, "events": [dict(event, step="q1")]}, REF, t).feedback.split("\n")
    assert "  your cell raised : " in feedback({})                       # no error, no message: nothing made up
    assert "  your cell raised " + "E" * 80 + ": m" in feedback({"error": "E" * 100, "message": "m"})
    assert "  a cell of this step ran again" in feedback({"error": "contended", "message": "ran again"})
    assert "  a cell of this step stopped" in feedback({"error": "timeout", "message": "stopped"})


def test_a_site_is_read_up_to_its_bound_and_not_past_it():
    """SITE_CHARS (300) is the longest site parsed: one of exactly 300 characters is normalised like the short
    form, one of 301 is cut and left as it is (the regex never sees it)."""
    short = "kernels/decode.py:step grid=(c.kda_heads,)"
    at = "kernels/decode.py" + " " * (t.SITE_CHARS - len(short)) + ":step grid=(c.kda_heads,)"
    assert len(at) == t.SITE_CHARS and t._site(at) == t._site(short) == "decode.py:step:(c.kda_heads,)"
    past = " " + at
    assert len(past) == t.SITE_CHARS + 1 and t._site(past) == past[:t.SITE_CHARS]


def test_sixty_four_sites_are_read_and_sixty_five_are_not():
    a = right()
    sites = list(REF["head_sites"])
    a["head_sites"] = (sites * t.MAX_SITES)[:t.MAX_SITES]               # the right sites, repeated to the bound
    assert [ok for _, ok, _ in t.q8(a, REF)] == [True, True]
    a["head_sites"] = (sites * (t.MAX_SITES + 1))[:t.MAX_SITES + 1]
    assert [ok for _, ok, _ in t.q8(a, REF)] == [False, False]


def test_an_empty_ranking_fails_q3_by_its_checks_not_by_an_error():
    a = right()
    a["ranking"], a["offender"] = [], "x"
    assert t.score_one("q3", a, REF) == [(p, False, m) for p, _, m in t.q3(right(), REF)]


def test_an_answer_is_read_up_to_65536_characters_of_json():
    """ANSWER_CHARS (65,536) as JSON is the longest answer read: a string of exactly that length is scored by
    q9's checks; one character more fails q9 whole, saying how long it was; an answer too deep to write as JSON
    counts as one character over the bound."""
    a = right()
    a["why_differ"] = "x" * (t.ANSWER_CHARS - 2)                       # + 2 quotes = 65,536
    assert t.score_one("q9", a, REF)[1] == t.q9(a, REF)[1]
    a["why_differ"] = "x" * (t.ANSWER_CHARS - 1)
    assert t.score_one("q9", a, REF) == [(2, False, "`why_differ` is too long to be an answer (65,537 characters as "
                                                   "JSON; at most 65,536)")]
    deep = []
    for _ in range(100_000):
        deep = [deep]
    a = right()
    a["largest_measured"] = deep
    assert t.score_one("q9", a, REF) == [(2, False, "`largest_measured` is too long to be an answer (65,537 "
                                                   "characters as JSON; at most 65,536)")]


# ---------------------------------------------------------------- steps 6-7: what the grader's re-run decides
def test_step_6s_rule_at_its_edges():
    assert t._verdict(0.75, 0.5) == "faster" and t._verdict(0.5, 0.5) == "no measurable difference"
    assert t._verdict(-0.5, 0.5) == "no measurable difference" and t._verdict(-0.75, 0.5) == "slower"
    assert t._verdict(0.0, 0.0) == "no measurable difference"


def _gpu(ms, control=None, order="ABBAAB"):
    return {"gpu": {"abba": {"order": list(order), "ms": ms}, "control_ms": control}}


def test_the_graders_own_abba_is_decisive_only_past_three_times_its_noise():
    # A (reps 0, 3, 4) = 10.0, 10.25, 10.5 (median 10.25, range 0.5); B (reps 1, 2, 5) = 12.0 each (range 0)
    ms = [10.0, 12.0, 12.0, 10.25, 10.5, 12.0]
    assert t._measured_verdict(_gpu(ms)) == ("faster", True)                # gap 1.75 > 3 x 0.5
    assert t._measured_verdict(_gpu(ms, control=0.5)) == ("faster", True)    # |control| = the range: the same
    assert t._measured_verdict(_gpu(ms, control=-0.625)) == ("faster", False)   # 1.75 < 3 x 0.625
    assert t._measured_verdict(_gpu(ms, control=1.75 / 3)) == ("faster", False)  # exactly 3 x: not past it
    swapped = [12.0, 10.0, 10.25, 12.0, 12.0, 10.5]                          # B is the faster arm
    assert t._measured_verdict(_gpu(swapped)) == ("slower", True)
    assert t._measured_verdict(_gpu(ms, order="BAABBA")) == ("slower", True)   # the order names the arms
    even = [10.0, 10.25, 10.25, 10.0, 10.5, 10.5]                           # gap 0.0 within the ranges
    assert t._measured_verdict(_gpu(even)) == ("no measurable difference", False)
    assert t._measured_verdict({"gpu": {"abba": None}}) is None and t._measured_verdict({"gpu": None}) is None


def test_what_replay_serves_each_arm_in_the_learners_order():
    r = right_rerun()
    reps = REF["fix_runs"]['[[224, 32, 1], []]']
    a, b = reps["A"], reps["B"]
    assert t._replayed(r, REF) == {"A": a, "B": b}
    assert t._replayed(dict(r, order="AAAAB"), REF) == {"A": [a[0], a[1], a[2], a[0]], "B": [b[0]]}   # in turn
    same = copy.deepcopy(r)
    same["arms"]["A"] = dict(same["arms"]["B"])                          # both main: one counter for both
    assert t._replayed(same, REF) == {"A": [b[0], b[0], b[1]], "B": [b[1], b[2], b[2]]}
    other = copy.deepcopy(r)
    other["widths"]["7168"]["plan"] = [56, 128, 1]                        # main's reps come from the plan's ABBA
    other["arms"]["A"]["plan"] = [56, 128, 1]
    mine = REF["fix_runs"]['[[56, 128, 1], []]']
    assert t._replayed(other, REF) == {"A": mine["A"], "B": mine["B"]}
    unrecorded = copy.deepcopy(r)
    unrecorded["arms"]["A"]["plan"] = [150, 48, 1]
    assert t._replayed(unrecorded, REF) is None
    no_plan = copy.deepcopy(same)
    no_plan["widths"]["7168"]["plan"] = None                               # main's reps: the reference plan's
    assert t._replayed(no_plan, REF)["B"] == [b[1], b[2], b[2]]
    no_widths = {k: v for k, v in same.items() if k != "widths"}
    assert t._replayed(no_widths, REF)["B"] == [b[1], b[2], b[2]]
    for bad in (dict(r, order=None), dict(r, order=""), dict(r, order="ABC"), dict(r, arms={"A": r["arms"]["A"]}),
                dict(r, arms={"A": r["arms"]["A"], "B": dict(r["arms"]["B"], error="x")}),
                dict(r, arms={"A": dict(r["arms"]["A"], error="x"), "B": r["arms"]["B"]}), {}):
        assert t._replayed(bad, REF) is None, bad.get("order")


def test_each_way_a_plan_fails_says_where_and_how_in_the_learners_terms():
    r = right_rerun()
    assert t._widths_message(r) is None

    def at(n, **row):
        x = copy.deepcopy(r)
        x["widths"][str(n)].update(row)
        return t._widths_message(x)
    assert at(1001, missed=9) == "at n = 1,001 your plan [32, 32, 1] leaves 9 elements unadded"
    assert at(100003, past_end=3) == "at n = 100,003 your plan [3126, 32, 1] writes 3 elements past the end of h"
    assert at(2, plan=None, error="TypeError: x") == "at n = 2 your plan gave no (grid, block, ept): TypeError: x"
    assert at(31, error="grid 0: a launch needs at least one block") == ("at n = 31: grid 0: a launch needs at least "
                                                                          "one block")
    two = copy.deepcopy(r)
    two["widths"]["1"]["missed"] = 1
    two["widths"]["1001"]["past_end"] = 1
    assert t._widths_message(two).startswith("at n = 1 your plan")        # the first width that fails
    for key in ("error", "missed", "past_end", "wrong"):
        g = copy.deepcopy(r)
        g["gpu"] = {"status": "ok", "counted": {"7168": {"missed": 0, "past_end": 0, "wrong": 0}, "1001": {key: 2}}}
        assert t._widths_message(g) == f"launched on the GPU at n = 1,001 between guard words: {{'{key}': 2}}"
    g["gpu"]["counted"]["1001"] = {"missed": 0, "past_end": 0, "wrong": 0}
    assert t._widths_message(g) is None


def test_the_gpu_part_is_down_when_its_rerun_did_not_finish_or_gave_nothing():
    assert t._gpu_down({}) is None and t._gpu_down({"gpu": None}) is None
    assert t._gpu_down({"gpu": {"status": "timeout: stopped after 45 s"}}) == (
        "the re-run of your step 6 on the GPU did not finish (timeout: stopped after 45 s)")
    assert t._gpu_down({"gpu": {"status": "ok", "counted": {}}}) == "the re-run of your step 6 on the GPU gave no plan to launch"
    assert t._gpu_down({"gpu": {"status": "ok", "counted": {"1": {"missed": 0}}}}) is None


def _q6(r, **answers):
    a = {k: right()[k] for k in t.ANSWERS["q6"]} | answers
    return [(ok, m) for _, ok, m in t.q6(dict(a, rerun=r), REF)]


def test_step_6_on_the_gpu_its_three_points_and_what_each_says():
    r = right_rerun()
    r["gpu"] = {"status": "ok", "counted": {"7168": {"missed": 0, "past_end": 0, "wrong": 0}},
                "abba": {"order": list("ABBAAB"), "ms": [10.0, 12.0, 12.0, 10.0, 10.0, 12.0]}, "control_ms": 0.0}
    got = _q6(r)                                   # the grader measured 'faster', decisively; the learner said so
    assert [ok for ok, _ in got] == [True, True, True] and REF["verdict"] == "faster"
    r["gpu"]["abba"]["ms"] = [12.0, 10.0, 10.0, 12.0, 12.0, 10.0]
    assert _q6(r)[2] == (False, "the grader's own ABBA of your two arms on the GPU measured 'slower', decisively")
    assert _q6(r, verdict="slower")[2][0] is False                        # and the recorded reps say faster
    r["gpu"]["abba"]["ms"] = [10.0, 10.0, 10.0, 10.0, 10.0, 10.0]
    assert _q6(r)[2][0] is True                                           # not decisive: the recorded rule holds
    r["gpu"] = {"status": "timeout: stopped after 45 s"}
    down = "the re-run of your step 6 on the GPU did not finish (timeout: stopped after 45 s)"
    assert _q6(r) == [(False, down), (True, "the ABBA your cells ran went 'ABBAAB': three pairs, one of each arm per "
                                             "pair, the first arm of each pair alternating"), (False, down)]
    x = right_rerun()
    x["blocks_at_n"] = 28
    assert _q6(x)[0] == (False, "at n = 7,168 your plan launches 28 blocks: still under step 2's 50 % line (66 of "
                                "the 132 SMs)")
    assert _q6(dict(x, widths={}, status="the harness did not report (x)"))[0] == (False, "the harness did not report (x)")
    for arm, key in (("A", "error"), ("B", "error")):
        y = copy.deepcopy(right_rerun())
        y["arms"][arm][key] = "arm A is not a dict"
        assert _q6(y)[1] == (False, "arms: A must launch your plan (LAUNCHLAB_LAB_ADD=1) and B main's (0)")


def test_the_claim_is_scored_against_the_graders_own_bytes():
    r = right_rerun()
    assert t._truth(r, REF) is True
    moved = copy.deepcopy(r)
    moved["arms"]["A"]["extra"] = [["MLA_FLOOR", "derived"]]
    assert t._truth(moved, REF) is False                                  # recorded: 131,072 differs
    flipped = copy.deepcopy(moved)
    flipped["arms"] = {"A": moved["arms"]["B"], "B": moved["arms"]["A"]}
    assert t._truth(flipped, REF) is False                                # main on either side
    same = copy.deepcopy(r)
    same["arms"]["B"] = dict(same["arms"]["A"])
    assert t._truth(same, REF) is None          # one arm twice: no recorded cmp answers it (q7 refuses it first)
    neither = copy.deepcopy(moved)
    neither["arms"]["B"] = dict(r["arms"]["A"])
    assert t._truth(neither, REF) is None                                 # two arms, neither main: not recorded
    unrecorded = copy.deepcopy(r)
    unrecorded["arms"]["A"]["plan"] = [150, 48, 1]
    assert t._truth(unrecorded, REF) is None
    for bad in ({}, {"arms": {"A": r["arms"]["A"]}}, {"arms": {"A": dict(r["arms"]["A"], error="x"), "B": r["arms"]["B"]}}):
        assert t._truth(bad, REF) is None
    gpu = dict(r, gpu={"cmp": {"2048": {"identical": True}, "131072": {"identical": False}}})
    assert t._truth(gpu, REF) is False                                    # the GPU's own cmp wins
    gpu["gpu"]["cmp"]["131072"]["identical"] = True
    assert t._truth(moved | {"gpu": gpu["gpu"]}, REF) is True
    q7 = lambda rr, claim: [ok for _, ok, _ in t.q7({"rerun": rr, "claim": claim, "evidence": "cmp",   # noqa: E731
                                                      "depths": [2048, 131072]}, REF)]
    assert q7(moved, "not bit-identical") == [True, True] and q7(moved, "bit-identical") == [True, False]
    assert q7(r, "not bit-identical") == [True, False] and q7(r, "bit-identical") == [True, True]
    assert q7(unrecorded, "bit-identical") == [True, False]


def test_the_fix_references_are_the_recordings_own():
    assert REF["fix_reference"] == '[[224, 32, 1], []]' and REF["fix_same"] == {"2048": True, "131072": True}
    assert t.config_key(None, []) == "[null, []]" and t.config_key([1, 2, 3], [("B", "x"), ("A", "y")]) == (
        '[[1, 2, 3], [["A", "y"], ["B", "x"]]]')


EXTRA_ROW = "mla_decode:mla_combine [16, 16, 1] 256"         # in the ranking, 256 blocks: never under 50 % of SMs


@pytest.mark.parametrize("changes, want", [
    # each list the lab asks for, with one more entry than the right one -- a real key, a real name, a real depth
    (dict(flagged=lambda f: f + [EXTRA_ROW]), {"q2": 1}),
    (dict(ruled_out=["arithmetic", "contention", "starvation"]), {"q4": 1}),        # rules out its own verdict
    (dict(ruled_out=["arithmetic", "contention", "contention"]), {"q4": 1}),
    (dict(ranking=lambda r: r + ["made_up [1] 1"]), {"q3": 2}),                     # past the top three
    (dict(ranking_by_occupancy=lambda r: r + ["made_up [1] 1"]), {"q3": 2}),
    (dict(depths=lambda d: d + [4096]), {"q7": 1}),                                 # a depth the fix never ran
    (dict(head_sites=lambda s: s + ["kernels/decode.py:step grid=(c.kda_heads * 2,)"]), {"q8": 1}),
    # and one fewer (the complement), each costing the same point
    (dict(flagged=lambda f: f[1:]), {"q2": 1}),
    (dict(ruled_out=["arithmetic"]), {"q4": 1}),
    (dict(depths=lambda d: d[:1]), {"q7": 1}),
])
def test_a_list_longer_or_shorter_than_the_right_one_loses_its_point(changes, want):
    assert lost(**changes) == want


def test_a_partial_loss_says_which_check_lost_and_nothing_of_the_ones_that_passed():
    """q4 is worth 3: a ruled-out list with one name too many loses the diagnosis point alone. The learner reads
    the question's score, the one check that failed, word for word, and no line of the two that passed."""
    a = values()
    a["ruled_out"] = {"value": ["arithmetic", "contention", "starvation"]}
    g = grading.score({"answers": a}, REF, t, "eve", rerun_facts=right_rerun())
    assert g.points["q4"] == 2.0 and g.total == 19.0 and g.out_of == 20.0
    fb = g.feedback.split("\n")
    i = fb.index("q4: 2 / 3")
    assert fb[i + 1:i + 2] == ["  lost 1: diagnosis: far off its floor and tight over the reps -- which "
                               "alternatives does that rule out?"]
    assert fb[i + 2] == "q5: 2 / 2"                       # nothing more under q4: not the passed checks
    assert "floor_us" not in "\n".join(fb[i:i + 2]) and "spread_pct" not in "\n".join(fb[i:i + 2])
    assert [line for line in fb if line.startswith("  ")] == fb[i + 1:i + 2]      # the only loss in the notebook


def test_a_loss_the_machine_caused_is_not_told_as_the_learners_error():
    """A cell the collector stopped while the machine was busy (event 'contended', then its second run's timeout)
    reads as the step's cell and the machine, never as 'your cell raised'; the learner's own exception does."""
    collected = {"answers": {}, "events": [
        {"step": "q1", "error": "contended", "message": "the machine was busy: the cell waited for a CPU more than "
                                                        "half its time, so it ran again"},
        {"step": "q1", "error": "timeout", "message": "the cell ran past its time limit (20 s) and was stopped"},
        {"step": "q2", "error": "ZeroDivisionError", "message": "division by zero"}]}
    fb = grading.score(collected, REF, t, "fay").feedback.split("\n")
    q1 = fb[:fb.index("q2: 0 / 2")]
    assert "  a cell of this step the machine was busy: the cell waited for a CPU more than half its time, so it " \
           "ran again" in q1
    assert "  a cell of this step the cell ran past its time limit (20 s) and was stopped" in q1
    assert not [line for line in q1 if "your cell" in line]
    assert "  your cell raised ZeroDivisionError: division by zero" in fb


def test_an_ab_of_nothing_or_of_two_changes_is_told_by_the_lecture_s_rule_word_for_word():
    """Issue 58: the grader names §6's rule for arms of one configuration and for a second gate (in either arm,
    every gate it sets), and §7's for a claim of identity on one configuration."""
    r = right_rerun()
    same = copy.deepcopy(r)
    same["arms"]["B"] = dict(same["arms"]["A"])
    assert t._confounded(same["arms"]["A"], same["arms"]["B"]) == (
        "arms: A and B are the same configuration, so the A/B measures nothing -- §6: the arms differ in the one "
        "thing under test, your plan (LAUNCHLAB_LAB_ADD=1 against 0)")
    two = copy.deepcopy(r)
    two["arms"]["A"]["extra"] = [["MLA_FLOOR", "derived"], ["PDL", "0"]]
    two["arms"]["B"]["extra"] = [["KDA_VT", "1"]]
    assert t._confounded(two["arms"]["A"], two["arms"]["B"]) == (
        "arms: A also sets LAUNCHLAB_MLA_FLOOR=derived, LAUNCHLAB_PDL=0; B also sets LAUNCHLAB_KDA_VT=1 -- a gain "
        "would be that gate's as much as your plan's; §6: nothing but the thing under test differs between the arms")
    assert t._confounded(r["arms"]["A"], r["arms"]["B"]) is None
    assert not t._same({}, r["arms"]["B"]) and not t._same(r["arms"]["A"], {})
    err = dict(r["arms"]["A"], error="x")
    assert not t._same(err, dict(err)) and t._same(r["arms"]["A"], dict(r["arms"]["A"]))
    got = t.q7({"rerun": same, "claim": "bit-identical", "evidence": "cmp", "depths": [2048, 131072]}, REF)
    assert got == [(1, True, "depths: more than one depth (each one the cmp compared), and the evidence for a "
                             "bit-identity claim is bytes compared (cmp)"),
                   (1, False, "claim: your two arms are one configuration: its cmp with itself is identical by "
                              "construction and shows nothing -- §7: compare the bytes of the two arms you changed")]
    six = t.q6({"rerun": same, **{k: None for k in t.ANSWERS["q6"]}}, REF)
    assert six == [(1, False, t._confounded(same["arms"]["A"], same["arms"]["B"]))] * 3


def test_one_configuration_needs_both_arms_read_and_the_second_plan_is_no_main():
    r = right_rerun()
    a = r["arms"]["A"]
    err = dict(a, error="x")
    assert not t._same(err, dict(a)) and not t._same(dict(a), err)       # an arm not read is no configuration
    other = {"A": a, "B": dict(a, plan=[112, 64, 1])}                       # two plans: they differ, neither main
    six = t.q6({"rerun": dict(r, arms=other), **{k: None for k in t.ANSWERS["q6"]}}, REF)
    assert six[1] == (1, False, "arms: A must launch your plan (LAUNCHLAB_LAB_ADD=1) and B main's (0)")
    same = dict(r, arms={"A": a, "B": dict(a)})
    got = t.q7({"rerun": same, "claim": "bit-identical", "evidence": "cmp", "depths": [2048]}, REF)
    assert [ok for _, ok, _ in got] == [False, False]                    # one depth fails the form there too
    got = t.q7({"rerun": same, "claim": "bit-identical", "evidence": "tolerance", "depths": [2048, 131072]}, REF)
    assert [ok for _, ok, _ in got] == [False, False]
