"""The learners' release: what a class image and a learner's download hold, built from this repository (the
instructor's source, as with nbgrader's source/release and otter's master), with no solution, hidden test or
reference answer in it.

    python -m launchlab release [--out build/learner]       # also: make release

The release holds the notebooks (the learner copy of the lab, the self-check with its formative key), the
package (data and tools, not verdicts: the lab's reference arithmetic is instructor-side), the kernels, the
recordings, the docs and what installs the course. It leaves out lab_solutions/ (the lab's master, its
hidden tests, reference answers and the grader's test submissions), tests/, tools/ (but the installer),
deploy/'s class configuration, .ci/ and data/grading/. `leaks()` then reads every text file of the release for
any line of the instructor's material that the learner copy does not itself contain; the count is written to
data/release/report.json (summary --json: 09.learner_tree_solution_leaks).
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from launchlab.core import paths

ROOT = paths.ROOT
SHIPPED = ("notebooks", "launchlab", "kernels", "data/recordings", "docs", "README.md", "pyproject.toml",
           "environment.yml", "Makefile", "tools/install.py", "deploy/image")
INSTRUCTOR = ROOT / "lab_solutions"
LEARNER_LAB = ROOT / "notebooks" / "09_lab_audit.ipynb"
REPORT = ROOT / "data" / "release" / "report.json"
MIN_LINE = 16           # shorter lines ("import json", "}") are everyone's, not a solution's


def build(out: Path = ROOT / "build" / "learner") -> Path:
    """Write the learner tree into `out` (emptied first)."""
    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "*.pyc")
    for rel in SHIPPED:
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, out / rel, ignore=ignore)
        elif src.exists():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out / rel)
    return out


def _notebook_code(path: Path) -> list[str]:
    nb = json.loads(Path(path).read_text())
    return ["".join(c["source"]) for c in nb["cells"]]


def _telling(line: str) -> bool:
    """A line that says something of its own: an assignment, a definition, a return, an assertion or a call of at
    least MIN_LINE characters -- not an import, a comment or a bare `if ...:` / `except ...:` that any code has."""
    if len(line) < MIN_LINE or line.startswith(("#", '"""', "'''", "import ", "from ")):
        return False
    if "=" in line or line.startswith(("def ", "return ", "assert ", "yield ", "raise ")):
        return True
    return "(" in line and not line.startswith(("if ", "elif ", "else", "for ", "while ", "try", "except", "with "))


def instructor_lines(instructor: Path = INSTRUCTOR, learner_lab: Path = LEARNER_LAB) -> set[str]:
    """Every line of the instructor's material a learner must not hold: solution and test code of the master,
    the hidden tests, the reference answers, the grader's test submissions -- less what the learner copy of the
    lab itself shows (prompts, public tests, stubs)."""
    public = {line.strip() for text in _notebook_code(learner_lab) for line in text.splitlines()}
    lines: set[str] = set()
    for f in sorted(Path(instructor).rglob("*")):
        if not f.is_file() or "__pycache__" in f.parts:
            continue
        texts = _notebook_code(f) if f.suffix == ".ipynb" else [f.read_text()]
        for text in texts:
            for line in text.splitlines():
                line = line.replace("# SOLUTION", "").strip()
                if _telling(line) and line not in public:
                    lines.add(line)
    return lines


def leaks(tree: Path, instructor: Path = INSTRUCTOR) -> list[str]:
    """'file:line' for every line of the instructor's material found in the tree (0 in a good release)."""
    secret = instructor_lines(instructor)
    found = []
    for f in sorted(Path(tree).rglob("*")):
        if not f.is_file() or f.suffix in (".png", ".cubin"):
            continue
        try:
            text = f.read_text()
        except UnicodeDecodeError:
            continue
        if f.suffix == ".ipynb":                   # a notebook's cells, not its JSON escaping
            text = "\n".join(_notebook_code(f))
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip().replace("# SOLUTION", "").strip() in secret:
                found.append(f"{f.relative_to(tree)}:{i}")
    if (Path(tree) / "lab_solutions").exists():
        found.append("lab_solutions/ (the instructor's folder itself)")
    return found


def main(out: Path = ROOT / "build" / "learner", report: Path = REPORT) -> int:
    tree = build(out)
    found = leaks(tree)
    files = sum(1 for f in tree.rglob("*") if f.is_file())
    rep = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "tree": str(Path(out).name), "files": files,
           "shipped": list(SHIPPED), "solution_leaks": len(found), "leaks": found[:50]}
    Path(report).parent.mkdir(parents=True, exist_ok=True)
    Path(report).write_text(json.dumps(rep, indent=1) + "\n")
    print(f"learner tree: {out} ({files} files); lines of the instructor's material in it: {len(found)}")
    for f in found[:20]:
        print(f"  {f}")
    return 1 if found else 0
