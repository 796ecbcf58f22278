"""The set-up a newcomer relies on: pyproject, environment.yml, Makefile, README, CI agree."""
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


def _name_spec(req: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", req)
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def test_environment_yml_matches_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    want = dict(_name_spec(r) for r in py["dependencies"] + py["optional-dependencies"]["dev"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    have = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for p in dep["pip"]:
                if not p.startswith("-e"):
                    have.update([_name_spec(p)])
        elif not dep.startswith(("python", "pip")) or dep.startswith("pip:"):
            have.update([_name_spec(dep)])
    assert have == want, f"environment.yml and pyproject.toml disagree: only in env {set(have) - set(want)}, " \
                         f"only in pyproject {set(want) - set(have)}, specs {[(k, have.get(k), want.get(k)) for k in want if have.get(k) != want.get(k)]}"
    assert any(isinstance(d, dict) and "-e ." in d["pip"] for d in env["dependencies"])


def test_readme_opens_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    first_code = re.search(r"```(?:bash|sh)?\n(.*?)```", text, re.S).group(1)
    assert first_code.split() == ["make", "lab", "make", "test"] or \
        [l.split("#")[0].strip() for l in first_code.strip().splitlines()] == ["make lab", "make test"]


def test_makefile_targets_and_ci():
    mk = (ROOT / "Makefile").read_text()
    for target in ("lab:", "test:", "course:", "record:", "setup:"):
        assert re.search(rf"^{target}", mk, re.M), target
    assert "--nbval" in mk and "notebooks" in mk
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M), "the CI script must run `make test` on a line of its own"


def test_top_level_layout():
    for p in ("notebooks", "kernels", "lab_solutions", "tests", "environment.yml", "README.md",
              "pyproject.toml", "Makefile", "data", ".ci/run", "launchlab"):
        assert (ROOT / p).exists(), p


def test_ci_checks_the_reports_it_regenerates_last():
    """.ci/run keeps the committed browser and hub reports before it rewrites them, and its last step compares
    them with the new ones and runs the report tests on the new ones (issue 27)."""
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()
             if ln.strip() and not ln.strip().startswith("#")]
    keep = next(i for i, ln in enumerate(lines) if ln.startswith("cp data/browser/report.json"))
    assert "data/hub/report.json" in lines[keep] and keep < lines.index("make test") < lines.index("make test-browser")
    assert lines[-1] == ".venv/bin/python tools/check_reports.py build/committed-reports"
    assert lines.index("make hub-test") < len(lines) - 1


def test_the_report_check_sees_a_changed_outcome(tmp_path):
    import importlib.util
    import json
    spec = importlib.util.spec_from_file_location("check_reports", ROOT / "tools" / "check_reports.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name in ("browser", "hub", "site"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.json").write_text((ROOT / "data" / name / "report.json").read_text())
    assert all(old == new for _, _, old, new in mod.compare(tmp_path))
    b = json.loads((tmp_path / "browser" / "report.json").read_text())
    (tmp_path / "browser" / "report.json").write_text(json.dumps(dict(b, widgets_moved=b["widgets_moved"] + 1)))
    assert [(n, f) for n, f, old, new in mod.compare(tmp_path) if old != new] == [("browser", "widgets_moved")]
    s = json.loads((tmp_path / "site" / "report.json").read_text())
    (tmp_path / "site" / "report.json").write_text(json.dumps(dict(s, broken_links=s["broken_links"] + 1)))
    assert ("site", "broken_links") in [(n, f) for n, f, old, new in mod.compare(tmp_path) if old != new]
