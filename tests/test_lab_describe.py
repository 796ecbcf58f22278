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
