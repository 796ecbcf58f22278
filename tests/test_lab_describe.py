"""The lab's step 6 plan described where the learner writes it (issue 58): fix.describe states coverage as
measured -- the plan tried on CPU at the grader's widths, which the notebook never shows -- and says how it fails
without giving the answer. Expected counts are worked out below from each plan's own arithmetic."""
import pytest

from launchlab.faces import rerun
from launchlab.sections.s09_lab import fix


def right(n):
    return (-(-n // 256), 256, 1)


def tail(n):                 # misses the last partial block: right only where 256 divides n
    return (n // 256, 256, 1)


def two_each(n):             # two elements a thread: writes one past the end at every odd n
    return (-(-n // 64), 32, 2)


def test_the_widths_are_the_graders():
    assert fix.WIDTHS == rerun.WIDTHS and fix.N in fix.WIDTHS


def test_a_plan_right_everywhere_covers_every_width():
    assert all(why == "" for _, why in fix.tried(right))
    text = fix.describe(right)
    assert "covers every width tried exactly (10 of 10" in " ".join(text.split())


def test_a_plan_right_at_7168_only_where_256_divides_is_caught_with_the_widths_it_misses():
    got = dict(fix.tried(tail))
    exact = [n for n in fix.WIDTHS if n % 256 == 0]               # 5,120 and 7,168
    assert [n for n, why in got.items() if not why] == exact
    assert got[1000] == "232 elements never added"                # 1,000 - 3 x 256
    assert got[1].startswith("grid 0")                            # 1 // 256 = 0 blocks: refused, not launched
    said = " ".join(fix.describe(tail).split())
    assert "covers 2 of 10 widths tried exactly; fails at n = 1: grid 0" in said
    assert "covers n = 7,168 exactly" not in said                 # what it used to say of this plan


def test_writing_past_the_end_is_told_apart_from_missing_elements():
    got = dict(fix.tried(two_each))
    odd = [n for n in fix.WIDTHS if n % 2]
    assert sorted(n for n, why in got.items() if why) == odd
    assert all(got[n] == "1 element written past the end of h" for n in odd)


def test_a_plan_that_raises_at_a_width_is_said_not_raised():
    def picky(n):
        if n < 100:
            raise ZeroDivisionError("n too small")
        return right(n)
    got = dict(fix.tried(picky))
    assert got[31] == "plan(31) raised ZeroDivisionError: n too small" and got[7168] == ""


@pytest.mark.parametrize("plan", [right, tail, two_each])
def test_the_description_fits_the_page(plan):
    assert max(map(len, fix.describe(plan).splitlines())) <= 110


# ------------------------------------------------------------------ the public check of steps 6-7 (issue 58)
ADD = fix.ENV
A1, B0 = {ADD: "1"}, {ADD: "0"}


def test_a_right_fix_passes_the_public_check_in_either_abba_order():
    for seq in ("ABBAAB", "BAABBA"):
        assert fix.problems6(right, {"A": A1, "B": B0}, seq) == []
    assert fix.problems7({"A": A1, "B": B0}, [2048, 131072]) == []


@pytest.mark.parametrize("plan, arms, seq, says", [
    (tail, {"A": A1, "B": B0}, "ABBAAB", ["plan: covers 2 of 10 widths tried exactly; fails at n = 1: grid 0"]),
    (two_each, {"A": A1, "B": B0}, "ABBAAB", ["plan: covers 5 of 10 widths tried exactly; fails at n = 1: 1 element "
                                              "written past the end of h"]),
    (right, {"A": A1, "B": A1}, "ABBAAB", ["arms: A and B are the same configuration (grid 28, block 256"]),
    (right, {"A": B0, "B": B0}, "ABBAAB", ["arms: A and B are the same configuration (main's add_inplace)"]),
    (right, {"A": {ADD: "1", "LAUNCHLAB_MLA_FLOOR": "derived"}, "B": B0}, "ABBAAB",
     ["arms: arm A also sets LAUNCHLAB_MLA_FLOOR=derived: a gain would be that gate's"]),
    (right, {"A": A1, "B": {ADD: "0", "LAUNCHLAB_PDL": "0"}}, "ABBAAB",
     ["arms: arm B also sets LAUNCHLAB_PDL=0"]),
    (right, {"A": B0, "B": A1}, "ABBAAB", ["arms: A launches your plan (LAUNCHLAB_LAB_ADD=1) and B main's"]),
    (right, {"A": A1, "B": B0}, "AAABBB", ["sequence: 'AAABBB' is not an ABBA of three pairs -- §6: three pairs"]),
    (right, {"A": A1, "B": B0}, "ABBA", ["sequence: 'ABBA' is not an ABBA of three pairs"]),
    (right, {"A": A1, "B": B0}, "ABABAB", ["sequence: 'ABABAB' is not an ABBA of three pairs"]),
    (right, {"A": A1, "B": B0}, "ABBAABBA", ["sequence: 'ABBAABBA' is not an ABBA of three pairs"]),
    (tail, {"A": A1, "B": A1}, "AAABBB", ["plan: covers 2 of 10", "arms: A and B are the same", "sequence: 'AAABBB'"]),
])
def test_the_public_check_refuses_what_the_grader_refuses_with_the_lecture_s_reason(plan, arms, seq, says):
    """Each wrong fix the issue tried (a tail, an overrun, a gate that does not switch, a second gate changed, the
    arms swapped, AAABBB, ABABAB, four pairs) is caught before grading, one line per problem, each starting as
    written here. Worked out: of the widths 1, 2, 31, 1000, 1001, 2880, 5120, 7168, 7169, 100003 only 5,120 and
    7,168 divide by 256 (tail's 2 of 10); two_each overruns at the 5 odd ones; 7,168 / 256 = 28 blocks."""
    got = fix.problems6(plan, arms, seq)
    assert len(got) == len(says) and all(g.startswith(s) for g, s in zip(got, says)), got
    assert all("§6" in g for g in got if g.startswith(("arms: A and B", "arms: arm", "sequence")))


def test_the_public_check_never_gives_the_answer():
    """It says which widths fail and how, and which rule an arm breaks: never a working plan's numbers, never
    the claim or the evidence step 7 asks for."""
    text = "\n".join(fix.problems6(tail, {"A": A1, "B": B0}, "ABBAAB") + fix.problems7({"A": A1, "B": A1}, [1]))
    assert "ceil" not in text and "-(-" not in text and "//" not in text
    assert "bit-identical" not in text and "tolerance" not in text            # step 7's claim and evidence


def test_step_7s_comparison_is_checked_for_what_makes_a_claim_empty():
    got = fix.problems7({"A": A1, "B": A1}, [2048])
    assert got[0].startswith("arms: A and B are the same configuration (grid ")
    assert "identical by construction" in got[0] and got[1].startswith("depths: [2048]: compare at two depths")
    assert fix.problems7({"A": A1, "B": B0}, [2048, 2048]) == [
        "depths: [2048, 2048]: compare at two depths at least -- §7: a claim of identity compares the bytes of two "
        "different configurations, at more than one depth"]
    assert fix.problems7({"A": A1}, [2048, 131072])[0].startswith("arms: rep(arms, name)")
    assert fix.problems6(lambda n: (..., ..., ...), {"A": A1, "B": B0}, "ABBAAB") == ["plan: not written yet"]


def test_each_arm_rule_stands_alone_and_a_plan_bad_at_7168_is_judged_once():
    """A main arm with a second gate against main breaks two rules (the second gate, and no arm launches the
    plan): both are said. A plan that fails at 7,168 is said once, as the plan's; the arms are then read with a
    covering stand-in, so they are not refused for it too."""
    got = fix.problems6(right, {"A": {ADD: "0", "LAUNCHLAB_MLA_FLOOR": "derived"}, "B": B0}, "ABBAAB")
    assert len(got) == 2 and got[0].startswith("arms: arm A also sets LAUNCHLAB_MLA_FLOOR=derived")
    assert got[1] == "arms: A launches your plan (LAUNCHLAB_LAB_ADD=1) and B main's (LAUNCHLAB_LAB_ADD=0)"

    def short_at_7168(n):                     # 7,168 // 33 = 217 blocks of 32: 6,944 threads, 224 left
        return (n // 33, 32, 1)
    got = fix.problems6(short_at_7168, {"A": A1, "B": B0}, "ABBAAB")
    assert len(got) == 1 and got[0].startswith("plan: covers 0 of 10 widths tried exactly; fails at n = 1: grid 0")
    assert dict(fix.tried(short_at_7168))[7168] == "224 elements never added"
