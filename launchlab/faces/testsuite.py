"""How well the course's tests catch bugs, read from their committed reports (issue 27): the summary's "tests".

    mutation_score_pct, mutants, survivors_unexplained   data/mutation/report.json (`make mutation`, mutmut)
    coverage_pct                                         data/coverage/report.json (`make coverage`: make test
                                                         and the H200's GPU tests, combined)
    cli_subcommands_tested, cli_subcommands              tests/test_cli.py's cases against the parser's list
    figures_compared                                     notebook figures whose plotted data nbval compares
                                                         (launchlab.core.plotted)
"""
from __future__ import annotations

import ast
import json

from launchlab.core import paths, plotted

MUTATION = paths.ROOT / "data" / "mutation" / "report.json"
SEMANTIC = paths.ROOT / "data" / "mutation" / "semantic.json"   # tools/semantic_mutation.py (issue 43)
COVERAGE = paths.ROOT / "data" / "coverage" / "report.json"
MAKE_TEST = paths.ROOT / "data" / "tests" / "make_test.json"      # tools/clean_clone.py: make test on a fresh clone
CLI_TESTS = paths.ROOT / "tests" / "test_cli.py"


def cli_cases(path=CLI_TESTS) -> set[str] | None:
    """The subcommands tests/test_cli.py runs (the keys of its CASES), or None where the tests are not here
    (a learner's release)."""
    if not path.exists():
        return None
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "CASES" for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return set()


def subcommands(path=paths.ROOT / "launchlab" / "__main__.py") -> set[str]:
    """The CLI's subcommands, read from its source (`sub.add_parser("name")`): launchlab.__main__ imports the
    summary, so the summary does not import it back."""
    return {n.args[0].value for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "add_parser" and n.args
            and isinstance(n.args[0], ast.Constant)}


def headline() -> dict:
    mut = json.loads(MUTATION.read_text()) if MUTATION.exists() else {}
    cov = json.loads(COVERAGE.read_text()) if COVERAGE.exists() else {}
    every = subcommands()
    cases = cli_cases()
    compared, _ = plotted.in_notebooks()
    sem = json.loads(SEMANTIC.read_text()) if SEMANTIC.exists() else {}
    return {"mutation_score_pct": mut.get("score_pct"), "mutants": mut.get("mutants"),
            "survivors_unexplained": len(mut["survivors_unexplained"]) if mut else None,
            "semantic_mutants": sem.get("mutants"), "semantic_killed": sem.get("killed"),
            "coverage_pct": cov.get("percent"),
            "cli_subcommands_tested": len(cases & every) if cases is not None else None,
            "cli_subcommands": len(every), "figures_compared": compared, **make_test()}


def make_test() -> dict:
    """`make test` on a fresh clone (tools/clean_clone.py): its seconds from the clone to the end, set-up included,
    whether it passed, and its slowest test (each of the 15 slowest is listed in the report)."""
    if not MAKE_TEST.exists():
        return {}
    r = json.loads(MAKE_TEST.read_text())
    return {"make_test_seconds_clean_clone": r["seconds"], "make_test_passed_clean_clone": r["rc"] == 0,
            "make_test_slowest_test_seconds": max((x[0] for x in r["slowest"]), default=None)}
