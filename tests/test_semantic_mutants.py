"""The semantic mutants (tools/semantic_mutation.py, issue 43): realistic bugs kept as patches, each with the
tests that must kill it. Here, cheaply: every patch is well formed and still applies to the tree, and the kept
report covers exactly the patches there are, as they are, every one killed."""
import hashlib
import importlib.util
import json

from launchlab.core import paths

spec = importlib.util.spec_from_file_location("semantic_mutation", paths.ROOT / "tools" / "semantic_mutation.py")
sm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sm)


def test_every_mutant_names_its_gap_its_bug_and_tests_that_exist_and_still_applies():
    ps = sm.mutants()
    assert len(ps) >= 40
    for p in ps:
        meta = sm.header(p)
        for node in meta["kill"].split():
            assert (paths.ROOT / node.split("::")[0]).is_file(), (p.name, node)
        assert "diff --git" in p.read_text() and sm.applies(p), p.name


def test_a_header_without_its_kill_tests_is_refused(tmp_path):
    bad = tmp_path / "x.patch"
    bad.write_text("# gap: g\n# bug: b\ndiff --git a/x b/x\n")
    try:
        sm.header(bad)
    except ValueError as e:
        assert "kill" in str(e)
    else:
        raise AssertionError("a mutant with no kill tests was accepted")


def test_the_kept_report_is_every_patch_as_it_is_all_killed():
    rep = json.loads(sm.REPORT.read_text())
    now = {p.stem: hashlib.sha256(p.read_bytes()).hexdigest() for p in sm.mutants()}
    assert {r["mutant"]: r["sha256"] for r in rep["results"]} == now, "run `python tools/semantic_mutation.py`"
    assert rep["killed"] == rep["mutants"] == len(now) and rep["not_killed"] == []


# issue 43's gap classes, each by the words its mutants' `# gap:` lines carry: at least two mutants for each
GAP_CLASSES = {
    "a write into what the sandbox shows": "a bind made writable",
    "nothing outlives the sandbox, every limit holds": ("nothing outlives the sandbox", "every limit it states holds"),
    "feedback on a partial loss": "partial loss",
    "an error the learner did not cause": "an error the learner did not cause",
    "scoring with an over-long list": "scoring with an over-long list",
    "the release's leak scan in a notebook and at its threshold": ("leak scan in a notebook", "leak scan at its threshold"),
    "a slice inside a slice": "a slice inside a slice",
    "a recording of an older format": "a recording of an older format",
    "a header that includes another": "a header that includes another",
    "a summary key valid up to a bad suffix": "a summary key valid up to a bad suffix",
    "timing's ABBA": "timing's ABBA",
    "the diagnosis": "the diagnosis",
}


def test_every_gap_class_of_issue_43_has_at_least_two_mutants():
    gaps = [sm.header(p)["gap"] for p in sm.mutants()]
    count = {c: sum(1 for g in gaps if any(w in g for w in ((words,) if isinstance(words, str) else words)))
             for c, words in GAP_CLASSES.items()}
    assert {c: n for c, n in count.items() if n < 2} == {}, count
    assert len(gaps) >= 40
