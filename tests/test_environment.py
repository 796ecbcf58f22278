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
