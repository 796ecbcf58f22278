"""Replay answers any plan of the lab's step 6-7 (issue 58): a plan whose reps the H200 did not record is answered
with what the CPU computes of it for real and the measured gains of the recorded plans on each side of it -- never a
made-up time -- in a refusal that fits the learner's screen; its cmp against main is computed on the CPU (the add
alone, by both plans' index rule) and says so. Expected values are read from the recording file itself or worked
out by hand below."""
import json
import statistics

import numpy as np
import pytest

from launchlab.core import mode, paths, refusal
from launchlab.kernels import residual_add
from launchlab.sections.s09_lab import fix

pytestmark = pytest.mark.skipif(mode.is_live(), reason="replay's answer")

RAW = json.loads((paths.ROOT / "data" / "recordings" / "lab_fix.json").read_text())["data"]["lab_fix"]
ARMS = {"A": {fix.ENV: "1"}, "B": {}}


def gain(plan):
    """main's median rep less the plan's, straight from the file's runs (arm A is the plan, B main)."""
    r = next(r for r in RAW["runs"] if r["plan"] == list(plan) and not r["extra"])
    by = {o: [m for oo, m in zip(r["order"], r["ms"]) if oo == o] for o in "AB"}
    return statistics.median(by["B"]) - statistics.median(by["A"])


def refused(plan) -> str:
    fix.use(lambda n: plan if n == fix.N else residual_add.main_plan(n))
    try:
        with pytest.raises(fix.FixError) as e:
            fix.rep(ARMS, "A")
        return str(e.value)
    finally:
        residual_add.use(None)


def test_a_recorded_plan_is_served_its_own_recorded_rep():
    fix.use(lambda n: (-(-n // 64), 64, 1))
    try:
        first = fix.rep(ARMS, "A")
    finally:
        residual_add.use(None)
    r = next(r for r in RAW["runs"] if r["plan"] == [112, 64, 1])
    assert first == [m for o, m in zip(r["order"], r["ms"]) if o == "A"][0]


def test_an_unrecorded_plan_is_answered_with_its_cpu_facts_and_never_a_time():
    said = " ".join(refused((132, 64, 1)).split())
    assert "not recorded on the H200" in said and "needs a GPU" in said and "never made up" in said
    assert "132 blocks on 132 SMs (1.00 per SM)" in said                 # 132 / 132
    assert "32 resident per SM" in said                                   # 2,048 threads / 64: the thread limit
    assert "wave fill 3.1%" in said                                       # 132 of 32 x 132 = 4,224 slots
    assert "covers n = 7,168 exactly" in said


def test_the_neighbours_are_on_every_side_of_the_edit_with_their_measured_gain():
    said = " ".join(refused((132, 64, 1)).split())
    # same block and ept at its covering grid; block 32 below and 96 above at ept 1; ept 2 above at block 64
    for plan in ((112, 64, 1), (224, 32, 1), (75, 96, 1), (56, 64, 2)):
        assert f"{plan[0]} x {plan[1]} ept {plan[2]} {gain(plan):+.3f}" in said, plan
    assert said.index("112 x 64") < said.index("224 x 32")               # the same block and ept first


def test_an_unrecorded_block_gets_the_recorded_block_below_and_above_it():
    runs = fix.around((45, 160, 1), fix.recorded())
    assert [tuple(r.plan) for r in runs] == [(56, 128, 1), (38, 192, 1), (19, 192, 2)]
    runs = fix.around((8, 128, 7), fix.recorded())                       # ept 7: 4 below, 8 above
    assert {tuple(r.plan)[1:] for r in runs} >= {(128, 4), (128, 8)}


@pytest.mark.parametrize("plan", [(132, 64, 1), (45, 160, 1), (8, 128, 7), (300, 32, 1), (1, 1024, 7)])
def test_the_answer_fits_a_refusal_box(plan):
    err = fix.FixError(refused(plan))
    assert len(refusal.lines(fix.FixError, err)) <= 8


def test_an_arm_with_another_gate_says_what_was_recorded():
    with pytest.raises(fix.FixError, match="not recorded on the H200.*32 plans"):
        fix.rep({"A": {"LAUNCHLAB_MLA_FLOOR": "derived"}, "B": {}}, "A")


def test_an_unrecorded_plans_cmp_is_computed_on_the_cpu_and_says_so():
    fix.use(lambda n: (132, 64, 1) if n == fix.N else residual_add.main_plan(n))
    try:
        got = fix.cmp(ARMS, 2048)
    finally:
        residual_add.use(None)
    assert got.identical and got.differing == 0 and got.elements == 7168 and got.sha_a == got.sha_b
    assert "computed on the CPU" in got.note and "needs a GPU" in got.note
    assert all(len(ln) <= 110 for ln in str(got).split("\n"))


def test_emulate_adds_what_the_index_rule_reaches_and_nothing_else():
    h = np.arange(10, dtype=np.float32)
    a = np.full(10, 0.5, np.float32)
    exact = residual_add.emulate(residual_add.Plan(5, 2, 1), h, a)
    assert np.array_equal(exact, h + 0.5)
    short = residual_add.emulate(residual_add.Plan(2, 2, 2), h, a)     # 4 threads x 2 = 8: the last 2 untouched
    assert np.array_equal(short, np.r_[h[:8] + 0.5, h[8:]])
    past = residual_add.emulate(residual_add.Plan(1, 4, 3), h, a)      # threads start 0, 3, 6, 9: 12 > 10
    assert past.size == 10 and np.array_equal(past, h + 0.5)
    assert not np.shares_memory(exact, h)                                # h itself is left as it was
