"""The grader's re-run of the lab's steps 6-7 (launchlab.faces.rerun): the submission's own cells run again in the
sandbox, its plan called at widths the notebook never shows, and each way of getting the fix wrong found by the
grader -- not read from what the notebook printed (issue 39)."""
import json

import pytest

from launchlab.faces import grading, rerun

fx = grading.fixtures()
t = grading.tests()
MASTER = grading.MASTER


def _facts(tmp_path, kind: str) -> dict:
    if kind == "right":
        nb = json.loads(MASTER.read_text())
    else:
        nb = json.loads(fx.make_fixture(MASTER, kind, tmp_path / f"{kind}.ipynb").read_text())
    from launchlab.faces import sandbox
    return rerun.facts(nb, sandboxed=sandbox.available() is None)


@pytest.fixture(scope="module")
def ref():
    return t.references()


def test_the_rerun_runs_every_code_cell_from_the_top_through_step_7_in_order_whatever_their_metadata():
    nb = json.loads(MASTER.read_text())
    got = rerun.cells(nb)
    labels = [label for label, _ in got]
    # counted by hand from the master: the banner cell, one solution cell in each of steps 1-5, two in 6 and 7
    assert labels == ["the top, cell 1", "step 1, cell 1", "step 2, cell 1", "step 3, cell 1", "step 4, cell 1",
                      "step 5, cell 1", "step 6, cell 1", "step 6, cell 2", "step 7, cell 1", "step 7, cell 2"]
    src = dict(got)
    assert "def plan(n)" in src["step 6, cell 1"] and "fix.rep(arms, name)" in src["step 6, cell 2"]
    assert "fix.cmp" in src["step 7, cell 1"] and "fix.table" in src["step 7, cell 2"]   # the table after step 7 too
    assert not any("BEGIN TEST CONFIG" in s or "Step 8" in s or "head_sites" in s for _, s in got)
    for c in nb["cells"]:
        c["metadata"] = {}                         # a submission that dropped the tags: the same cells
    assert rerun.cells(nb) == got
    assert rerun.cells(json.dumps(nb).encode()) == got     # as bytes, read the way the harness reads them


def test_the_right_fix_covers_every_width_switches_and_interleaves(tmp_path, ref):
    f = _facts(tmp_path, "right")
    assert f["status"] == "ok" and f["errors"] == []
    assert set(f["widths"]) == {str(n) for n in rerun.WIDTHS}
    assert f["widths"]["1001"] == {"plan": [32, 32, 1], "error": None, "missed": 0, "past_end": 0}   # by hand
    assert f["widths"]["100003"]["plan"] == [3126, 32, 1] and f["blocks_at_n"] == 224
    assert f["arms"]["A"]["plan"] == [224, 32, 1] and f["arms"]["B"]["plan"] is None
    assert f["arms"]["A"]["extra"] == [] and f["order"] == "ABBAAB"
    assert f["compiled"]["registers"] > 0 and f["compiled"]["spill_bytes"] == 0
    checks = t.q6({"rerun": f, "reps_main": ref["reps_main"], "reps_fix": ref["reps_fix"], "gain_ms": ref["gain_ms"],
                   "spread_ms": ref["spread_ms"], "verdict": ref["verdict"]}, ref)
    assert [ok for _, ok, _ in checks] == [True, True, True]


@pytest.mark.parametrize("kind, says", [
    ("plan_misses_elements", "at n = 1: grid 0: a launch needs at least one block"),
    ("plan_writes_out_of_bounds", "at n = 1 your plan [1, 32, 2] writes 1 elements past the end of h"),
])
def test_a_plan_that_is_right_at_7168_and_wrong_elsewhere_is_caught_at_a_width_never_shown(tmp_path, ref, kind,
                                                                                           says):
    f = _facts(tmp_path, kind)
    assert f["widths"]["7168"]["error"] is None and f["widths"]["7168"]["missed"] == 0    # fine where it is shown
    p1 = t.q6({"rerun": f, "reps_main": None, "reps_fix": None, "gain_ms": None, "spread_ms": None,
               "verdict": None}, ref)[0]
    assert not p1[1] and p1[2] == says
    bad = {n for n, w in f["widths"].items() if w["missed"] or w["past_end"] or w["error"]}
    want = {str(n) for n in rerun.WIDTHS if n % (32 if kind == "plan_misses_elements" else 2)}
    assert bad == want


def test_an_abba_that_does_not_interleave_loses_step_6s_second_point(tmp_path, ref):
    order = _facts(tmp_path, "abba_not_interleaved")
    assert order["order"] == "AAABBB" and order["arms"]["B"]["plan"] is None
    p = t.q6({"rerun": order, **{k: None for k in t.ANSWERS["q6"]}}, ref)
    assert not p[1][1] and p[0][1]                       # the order's point lost, the plan's kept


def _right_answers(f, ref) -> dict:
    """The answers step 6 and 7 would credit for these facts were the arms sound: the reps replay serves."""
    want = t._replayed(f, ref)
    import statistics
    gain = statistics.median(want["B"]) - statistics.median(want["A"])
    spread = max(max(v) - min(v) for v in want.values())
    return {"rerun": f, "reps_main": want["B"], "reps_fix": want["A"], "gain_ms": gain, "spread_ms": spread,
            "verdict": t._verdict(gain, spread), "claim": "bit-identical", "evidence": "cmp",
            "depths": [2048, 131072]}


def test_an_ab_of_one_configuration_scores_nothing_in_step_6_and_its_identity_claim_nothing_in_step_7(tmp_path,
                                                                                                   ref):
    """Issue 58: both arms LAUNCHLAB_LAB_ADD=1 (A's line copied) compare nothing: every point of step 6 is lost,
    with §6's rule said, and step 7's claim of identity -- its cmp compares one configuration with itself."""
    gate = _facts(tmp_path, "gate_does_not_switch")
    assert gate["arms"]["A"]["plan"] == gate["arms"]["B"]["plan"] == [224, 32, 1]
    a = _right_answers(gate, ref)
    six = t.q6(a, ref)
    assert [ok for _, ok, _ in six] == [False, False, False]
    assert all(m.startswith("arms: A and B are the same configuration") and "§6" in m for _, _, m in six)
    seven = t.q7(a, ref)
    assert [ok for _, ok, _ in seven] == [True, False] and "§7" in seven[1][2]
    assert "identical by construction" in seven[1][2]


def test_an_arm_that_changes_a_second_gate_scores_nothing_in_step_6(tmp_path, ref):
    """Arm A also derives the MLA floor: its +1.17 ms is §4's, not the plan's. Step 6 gives none of its 3 points
    (the plan's included: the A/B it is measured by is not the plan's), and says which gate and which rule."""
    f = _facts(tmp_path, "bytes_move_claimed_identical")
    six = t.q6(_right_answers(f, ref), ref)
    assert [ok for _, ok, _ in six] == [False, False, False]
    assert six[0][2].startswith("arms: A also sets LAUNCHLAB_MLA_FLOOR=derived") and "§6" in six[0][2]
    right = _facts(tmp_path, "right")
    assert [ok for _, ok, _ in t.q6(_right_answers(right, ref), ref)] == [True, True, True]


def test_bytes_that_move_under_an_identity_claim_are_found_by_the_recorded_cmp(tmp_path, ref):
    f = _facts(tmp_path, "bytes_move_claimed_identical")
    assert f["arms"]["A"]["extra"] == [["MLA_FLOOR", "derived"]]
    checks = t.q7({"rerun": f, "claim": "bit-identical", "evidence": "cmp", "depths": [2048, 131072]}, ref)
    assert [ok for _, ok, _ in checks] == [True, False]
    checks = t.q7({"rerun": f, "claim": "not bit-identical", "evidence": "cmp", "depths": [2048, 131072]}, ref)
    assert [ok for _, ok, _ in checks] == [True, True]


def test_a_cell_that_would_spin_the_gpu_costs_nothing_where_there_is_none(tmp_path):
    f = _facts(tmp_path, "hang_on_the_gpu")
    assert f["status"] == "ok" and f["widths"]["7168"]["plan"] == [224, 32, 1] and f["order"] == "ABBAAB"
    assert any("step 6, cell 1" in e for e in f["errors"])        # its import or its launch raised, and was said


def test_a_plan_that_loops_forever_is_stopped_per_call_and_said(tmp_path):
    nb = json.loads(MASTER.read_text())
    for c in nb["cells"]:
        src = "".join(c["source"])
        if "def plan(n):" in src:
            c["source"] = src.replace("    return grid, block, ept", "    while n == 1001:\n        pass\n"
                                      "    return grid, block, ept")
    f = rerun.facts(nb, sandboxed=False)
    assert f["widths"]["1001"]["plan"] is None and "past 5 s" in f["widths"]["1001"]["error"]
    assert f["widths"]["1000"]["plan"] == [32, 32, 1]


def test_judged_reads_only_plain_values_whatever_the_harness_sent():
    j = rerun.judged({"plans": {"7168": {"plan": [224.0, 32, 1]}, "1": "x"}, "arms": {"A": 5}, "order": "A" * 100})
    assert j["widths"]["7168"]["plan"] is None and j["widths"]["1"]["plan"] is None
    assert j["arms"]["A"]["error"] and j["arms"]["B"]["error"] and j["order"] is None and j["blocks_at_n"] is None
    j = rerun.judged({"plans": {"7168": {"plan": [224, 32, 1]}},
                      "arms": {"A": {"LAUNCHLAB_LAB_ADD": "1"}, "B": {"LAUNCHLAB_NOT_A_GATE": "1"}}})
    assert j["arms"]["A"]["plan"] == [224, 32, 1] and "not a gate" in j["arms"]["B"]["error"]


def test_the_grader_s_verdict_on_the_gpu_counts_only_when_decisive():
    r = {"gpu": {"abba": {"order": list("ABBAAB"), "ms": [14.50, 14.60, 14.60, 14.50, 14.50, 14.60]},
                 "control_ms": 0.01}}
    assert t._measured_verdict(r) == ("faster", True)                  # 0.1 ms gap, 0 spread, 0.01 control
    r["gpu"]["control_ms"] = 0.04
    assert t._measured_verdict(r) == ("faster", False)                 # within 3 x the control's gap
    r["gpu"]["abba"]["ms"] = [14.60, 14.60, 14.60, 14.60, 14.60, 14.60]
    assert t._measured_verdict(r) == ("no measurable difference", False)
    assert t._measured_verdict({"gpu": None}) is None and t._measured_verdict({}) is None


def test_the_live_rerun_takes_only_the_names_the_cells_above_step_6_define():
    from launchlab.faces.rerun_harness import definitions
    src = ("import os\nfrom launchlab.sections.s09_lab import lab\ndata = lab.data()\nBLOCK = 32\nSHAPE = (1, [2])\n"
           "half = lambda n: n // 2\ndef blocks_for(n, b):\n    return -(-n // b)\nprint('measured')\n"
           "class Note:\n    pass\nwidth: int = 7168\nmade = BLOCK * 2\n")
    kept = definitions(src)
    ns: dict = {}
    exec(kept.replace("from launchlab.sections.s09_lab import lab\n", ""), ns)
    assert {k for k in ns if not k.startswith("__")} == {"os", "BLOCK", "SHAPE", "half", "blocks_for", "Note",
                                                         "width"}
    assert "lab.data()" not in kept and "print" not in kept and "made" not in kept    # calls and derived values out
    assert definitions("def broken(:\n") == "" and definitions("") == ""


@pytest.mark.parametrize("variant", ["helper_from_step_5", "constant_from_step_5", "plan_as_lambda"])
def test_the_live_rerun_s_plan_sees_what_step_5_defined(tmp_path, variant):
    """The live re-run (on the GPU: the plan's own cell) runs here in replay, stopping where `plan` is defined:
    a plan that uses step 5's constant or helper is still a plan."""
    data = fx.make_honest(MASTER, variant, tmp_path / f"{variant}.ipynb").read_bytes()
    report, status = rerun._run(data, {"widths": [7168, 1001], "upto_plan": True}, False, 60, False)
    assert status == "ok" and report["plans"]["7168"] == {"plan": [224, 32, 1]}, report
    assert report["plans"]["1001"] == {"plan": [32, 32, 1]} and not report["order"]       # no rep was run
