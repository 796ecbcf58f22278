"""The reliability sweep's bad inputs: at least 25 across the public API, each refused with the fix named and the
session working after (the cases this machine can run; the GPU ones run under -m gpu and in the recording)."""
import pytest

from launchlab.core import mode
from launchlab.faces import badinputs


def test_there_are_at_least_25_across_the_api_and_the_issues_kinds_are_among_them():
    cases = badinputs.CASES
    assert len(cases) >= 25 and len({c.area for c in cases}) >= 8
    text = " ".join(c.bad for c in cases).lower()
    for kind in ("block of 0", "2,048 threads", "float64", "strided", "numpy arrays handed to the live launcher",
                 "4 bytes off a 16-byte boundary", "kda_vt=2", "stale", "cut short", "truncated dump", "grid of 0"):
        assert kind in text, kind


def test_every_case_this_machine_runs_is_refused_with_the_fix_and_the_session_works_after():
    res = badinputs.run()
    ran = [r for r in res if r.ran]
    assert len(ran) >= 25 if not mode.is_live() else len(ran) == len(res)
    failed = [(r.bad, r.error, r.message) for r in ran if not r.ok]
    assert not failed, failed
    table = badinputs.table(res)
    assert table.count("\n") == len(res) + 1 and "| yes | yes |" in table


def test_a_case_that_raises_the_wrong_thing_or_hides_the_fix_is_reported_not_passed():
    wrong = badinputs.Case("x", "raises KeyError", lambda: {}["k"], ValueError, r"anything", lambda: True)
    quiet = badinputs.Case("x", "raises nothing", lambda: None, ValueError, r"anything", lambda: True)
    vague = badinputs.Case("x", "says nothing useful", lambda: (_ for _ in ()).throw(ValueError("bad")),
                           ValueError, r"float32", lambda: True)
    broke = badinputs.Case("x", "session broken after", lambda: (_ for _ in ()).throw(ValueError("use float32")),
                           ValueError, r"float32", lambda: 1 / 0)
    r = badinputs.run([wrong, quiet, vague, broke])
    assert [x.ok for x in r] == [False, False, False, False]
    assert not r[0].raised_right and r[1].error == "nothing raised" and not r[2].fix_named and not r[3].session_ok


@pytest.mark.gpu
@pytest.mark.skipif(not mode.is_live(), reason="needs a GPU")
def test_on_a_gpu_every_launcher_refuses_before_the_launch_and_the_next_launch_is_right():
    res = badinputs.run([c for c in badinputs.CASES if c.gpu])
    assert all(r.ran and r.ok for r in res), [(r.bad, r.error, r.message) for r in res if not r.ok]


def test_the_committed_report_and_docs_agree_with_the_cases():
    import json
    r = json.loads(badinputs.REPORT.read_text())
    assert r["cases"] == len(badinputs.CASES) and r["rejected"] == r["ran"] >= 25
    docs = badinputs.DOCS.read_text()
    assert all(c.bad in docs for c in badinputs.CASES)
    from launchlab.faces import reliability
    h = reliability.headline(reliability.reports())
    assert h["bad_inputs_rejected"] == r["rejected"] and h["bad_inputs_cases"] == len(badinputs.CASES)
