"""Adding a section touches only its folder, its kernel, its notebook, its test and one registry line
(docs/adding-a-section.md): a throwaway section is made from the template in a copy of this checkout, and the
recorder, summary, selftest, bench, exercises and course pick it up with no other edit."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab.faces import template

ROOT = Path(__file__).resolve().parent.parent
KEY, NAME, TITLE = "90", "scale_demo", "§90 a section made from the template"
FOLDER = f"launchlab/sections/s{KEY}_{NAME}"
COPIED = ("launchlab", "kernels", "notebooks", "lab_solutions", "docs", "tests/nbval_sanitize.cfg", "pyproject.toml",
          "data/recordings", "data/grading", "data/hub", "data/course", "data/browser", "data/reliability",
          "data/sanitizer", "data/release", "data/archs", "data/audit", "data/reading")


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A copy of this checkout (as a git repository, so what the template changes can be listed), with the
    template's section added."""
    root = tmp_path_factory.mktemp("checkout")
    for rel in COPIED:
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, root / rel, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / rel)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "before")
    written = template.instantiate(root, KEY, NAME, TITLE)
    return root, written


def _env(root) -> dict:
    """The copy first on the path (ahead of this checkout's editable install), then whatever was there."""
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, LAUNCHLAB_MODE="replay")


def run(root, code: str, timeout=300) -> str:
    env = _env(root)
    env.pop("LAUNCHLAB_DATA", None)
    env.pop("LAUNCHLAB_KERNELS", None)
    p = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


def test_the_new_section_touches_four_files_outside_its_folder(checkout):
    root, written = checkout
    changed = {line[3:] for line in _git(root, "status", "--porcelain", "-uall").splitlines()}
    outside = sorted(p for p in changed if not p.startswith(FOLDER + "/"))
    assert outside == sorted([f"kernels/{NAME}.cu", f"notebooks/{KEY}_{NAME}.ipynb", f"tests/test_section{KEY}.py",
                              "launchlab/sections/__init__.py"])
    assert len(outside) == len(template.OUTSIDE) <= 4
    diff = _git(root, "diff", "-U0", "launchlab/sections/__init__.py")
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert added == [f'+    "s{KEY}_{NAME}",'] and removed == []


@pytest.mark.slow                       # a checkout's summary, course and tests with the new section (~25 s)
def test_the_course_picks_the_new_section_up(checkout):
    """Its kernel compiles (its family declared by its manifest), the recorder measures its door into a
    recording, the summary shows its figures, the self-test lists its check, `bench` and the exercises know
    it, and the course runs its notebook -- all from the registry."""
    root, _ = checkout
    out = run(root, f"""
import json, launchlab
assert launchlab.__file__.startswith({str(root)!r}), launchlab.__file__
from launchlab import sections
from launchlab.core import compiler, recordings
from launchlab.core.checks import CHECKS
from launchlab.faces import course, exercises, recorder, summary
sec = sections.get({KEY!r})
name = "section{KEY}"
assert name in recorder.RECORDINGS and recorder.families(name) == [{NAME!r}]
b = compiler.compile_offline({NAME!r})
data = recorder.measure(name)                    # what `record` writes, here from the compiled kernel (replay)
made_here = {{"gpu": "no GPU (the template test, replay: occupancy from the NVRTC compile, no times)",
             "sm_count": 132, "driver": "none", "cuda_runtime": "none", "cupy": "none", "date": "now"}}
recordings.save(name, data, recorder.families(name), made_here)
figs = summary.figures()[{KEY!r}]
ids = [c.id for c in CHECKS if c.section == {KEY!r}]
nbs = [p.name for p in course.notebooks()]
r = sec.doors[0].recorded()
fb = exercises.grade("{KEY}.blocks_per_sm_256", r.blocks_per_sm[r.blocks.index(256)], r)
print(json.dumps({{"figs": figs, "ids": ids, "nbs": nbs, "right": fb.correct, "regs": b.resources_of("{NAME}_scale").registers}}))
""")
    got = json.loads(out.strip().splitlines()[-1])
    assert set(got["figs"]) == {"registers", "blocks_per_sm_block256"} and got["figs"]["registers"] == got["regs"]
    assert got["ids"] == [f"{NAME}_scale-equals-numpy"]
    assert got["nbs"][-1] == f"{KEY}_{NAME}.ipynb"
    assert got["right"] is True
    # the course runs its notebook in replay, and its own test passes
    out = run(root, f"""
from launchlab.faces import course
nb = course.execute(course.NOTEBOOK_DIR / "{KEY}_{NAME}.ipynb")
text = "".join(o.get("text", "") + o.get("data", {{}}).get("text/plain", "")
               for c in nb.cells if c.cell_type == "code" for o in c.outputs)
errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
assert not errors, errors
print(text)
""")
    assert "MODE: replay" in out and "blocks_per_sm_block256" in out and "not answered yet" in out
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"tests/test_section{KEY}.py"],
                       cwd=root, env=_env(root),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:]
