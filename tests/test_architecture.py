"""The package's shape: three tiers, no upward import, no cycle, one door per section, and notebooks that
never branch on the mode or read a recording's JSON."""
import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import launchlab
from launchlab import __main__ as cli
from launchlab import sections
from launchlab.core.door import Door
from launchlab.core.section import Section
from launchlab.faces import architecture as arch

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "launchlab"
TIERS = arch.TIERS
GRAPH = arch.graph()
CODE = {m: deps for m, deps in GRAPH.items() if m not in ("launchlab", "launchlab.__main__")}


def test_no_module_directly_under_the_package():
    loose = sorted(p.name for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert not loose, f"modules directly under launchlab/: {loose} (each belongs in a tier's folder)"


def test_every_folder_is_a_tier():
    folders = sorted(p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(TIERS), folders
    assert all(arch.tier(m) is not None for m in CODE), [m for m in CODE if arch.tier(m) is None]


def test_the_package_docstring_names_every_tier_and_section_folder():
    for t in TIERS:
        assert re.search(rf"^{t}/", launchlab.__doc__, re.M), t
    for name in arch.section_folders():
        assert name in launchlab.__doc__, name


def test_imports_only_go_down_the_tiers_and_faces_reach_sections_only_through_the_registry():
    """core imports only core; kernels import core; sections import core, kernels and sections; faces import
    anything but a section's own modules (they ask the registry, launchlab.sections)."""
    assert arch.upward_imports() == []


def test_the_architecture_measure_sees_an_upward_import(tmp_path):
    """The measure above can fail: a core module that imports a section, and a face that imports a section's
    module, are both reported."""
    for rel, text in {"launchlab/__init__.py": "", "launchlab/core/__init__.py": "",
                      "launchlab/core/a.py": "from launchlab.sections.s01_x import lesson\n",
                      "launchlab/faces/__init__.py": "", "launchlab/faces/b.py": "from launchlab.sections.s01_x import lesson\n",
                      "launchlab/sections/__init__.py": "", "launchlab/sections/s01_x/__init__.py": "",
                      "launchlab/sections/s01_x/lesson.py": "from launchlab.core import a\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    ups = arch.upward_imports(tmp_path)
    assert ("launchlab.core.a", "launchlab.sections.s01_x.lesson") in ups
    assert ("launchlab.faces.b", "launchlab.sections.s01_x.lesson") in ups
    assert arch.import_cycles(tmp_path), "core.a -> lesson -> core.a is a cycle"


def test_no_import_cycle_between_modules_or_section_folders():
    """A section may build on another's door (the lab on §6's), never both ways round."""
    assert arch.import_cycles() == []


def test_sibling_imports_are_at_module_level():
    """Only the CLI imports a command's modules lazily (so `gates` does not load matplotlib)."""
    lazy = {m: [d for d, inner in deps if inner] for m, deps in GRAPH.items() if m != "launchlab.__main__"}
    assert not {m: d for m, d in lazy.items() if d}


def test_mode_only_decides():
    assert GRAPH["launchlab.core.mode"] == []


def test_only_mode_and_door_ask_which_mode_this_is():
    """Everything else asks mode.choose / a door's choose, or refuses with mode.require_live."""
    assert arch.mode_reads() == []


def test_the_mode_rule_sees_a_read(tmp_path):
    (tmp_path / "launchlab" / "faces").mkdir(parents=True)
    (tmp_path / "launchlab" / "faces" / "x.py").write_text("from launchlab.core import mode\nif mode.is_live():\n    pass\n")
    assert arch.mode_reads(tmp_path) == ["launchlab/faces/x.py:2 .is_live"]


# ------------------------------------------------------------------ the section folders and their registry
def test_every_section_folder_is_registered_with_its_manifest():
    assert sorted(sections.FOLDERS) == arch.section_folders()
    for folder, sec in zip(sections.FOLDERS, sections.all()):
        assert (PKG / "sections" / folder / "manifest.py").exists(), folder
        assert isinstance(sec, Section) and folder[1:3] == sec.key, folder
        for nb in sec.notebooks:
            assert (ROOT / "notebooks" / nb).exists(), nb
    assert [s.key for s in sections.all()] == sorted(s.key for s in sections.all())


def test_every_door_of_a_section_is_declared_by_its_manifest():
    """A lesson module's DOOR is in its own section's manifest (so the recorder writes it), and its module
    exposes the three calls."""
    declared = {id(d): s for s in sections.all() for d in s.doors}
    for m in CODE:
        folder = arch.section_of(m)
        if not folder:
            continue
        mod = importlib.import_module(m)
        door = getattr(mod, "DOOR", None)
        if isinstance(door, Door):
            assert id(door) in declared and declared[id(door)].key == folder[1:3], m
            assert mod.measure is door.measure and mod.data == door.data and mod.recorded == door.recorded, m


def test_the_recorder_summary_selftest_bench_and_course_read_the_registry(summary_figures):
    from launchlab.core.checks import CHECKS
    from launchlab.faces import bench, course, recorder
    doors = [d for s in sections.all() for d in s.doors]
    recorded = [d for ds in recorder.RECORDINGS.values() for d in ds]
    # every door once (a recording may gather doors of several sections: "slices" holds §1's, §3's and the lab's,
    # each in the registry's order)
    assert sorted(recorded, key=lambda d: [id(x) for x in doors].index(id(d))) == doors
    assert all([doors.index(d) for d in ds] == sorted(doors.index(d) for d in ds) for ds in recorder.RECORDINGS.values())
    figs = summary_figures
    assert {s.summary_key or s.key for s in sections.all() if s.headlines} <= set(figs)
    assert {c.section for c in CHECKS} == {s.key for s in sections.all() if s.checks}
    assert list(bench.benches()) == [b for s in sections.all() for b in s.benches]
    assert [p.name for p in course.notebooks()] == [n for s in sections.all() for n in s.notebooks]


def test_the_summary_reports_the_architecture_as_measured(summary_figures):
    from launchlab.faces import template
    a = summary_figures["architecture"]
    assert a == {"section_folders": len(sections.FOLDERS), "files_outside_folder_to_add_a_section": len(template.OUTSIDE),
                 "mode_reads_outside_mode_door": 0, "import_cycles": 0, "upward_imports": 0}
    assert a["section_folders"] >= 11 and a["files_outside_folder_to_add_a_section"] <= 4


def test_the_readme_holds_the_registry_s_map():
    from launchlab.faces import template
    text = (ROOT / "README.md").read_text()
    assert template.readme_with_map(text, sections.course_map("notebooks/")) == text, \
        "the README's map of the sections is stale: python -m launchlab sections --readme"


def test_no_face_module_names_a_section():
    """Faces ask the registry; the section folders' names appear in no face's source."""
    for m, p in arch.modules().items():
        if arch.tier(m) == TIERS.index("faces"):
            src = p.read_text()
            assert not re.search(r"\bs\d\d_[a-z]", src), f"{m} names a section folder"


# ------------------------------------------------------------------ notebooks
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
FORBIDDEN_CALLS = {"is_live", "require_live", "load", "from_dict"}


def _code_cells(nb_path):
    nb = json.loads(nb_path.read_text())
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] == "code":
            yield i, "".join(c["source"])


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_cells_never_branch_on_the_mode_or_read_recording_json(nb):
    for i, src in _code_cells(nb):
        tree = ast.parse(src)
        for n in ast.walk(tree):
            if isinstance(n, ast.Call):
                f = n.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
                assert not (name in FORBIDDEN_CALLS and (name != "load" or owner == "recordings")), \
                    f"{nb.name} cell {i} calls {owner + '.' if owner else ''}{name}"
            if isinstance(n, ast.Subscript):
                sl = n.slice
                assert not (isinstance(sl, ast.Constant) and isinstance(sl.value, str)), \
                    f"{nb.name} cell {i} indexes with a string ({ast.unparse(n)}): use the typed result"
            if isinstance(n, ast.Name):
                assert n.id != "recordings", f"{nb.name} cell {i} reaches into recordings"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_opens_with_the_banner(nb):
    cells = [src for _, src in _code_cells(nb) if not src.startswith("# Initialize Otter")]   # the lab's grader
    assert "banner(" in cells[0]


# ------------------------------------------------------------------ the README and the CLI match the code
def test_readme_layout_names_every_module():
    readme = (ROOT / "README.md").read_text()
    for m in CODE:
        leaf = m.rsplit(".", 1)[-1]
        if leaf != "launchlab" and m.count(".") >= 2:
            assert f"`{leaf}`" in readme or f"`{leaf}.py`" in readme, m


def test_cli_help_lists_every_command_and_only_those():
    p = subprocess.run([sys.executable, "-m", "launchlab", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    parser_cmds = set(re.search(r"\{([^}]*)\}", p.stdout).group(1).split(","))
    doc_cmds = set(re.findall(r"^  ([a-z][a-z-]+)", cli.__doc__, re.M))
    assert parser_cmds == doc_cmds, parser_cmds ^ doc_cmds
    readme = (ROOT / "README.md").read_text()
    for c in parser_cmds:
        assert f"launchlab {c}" in readme or f"make {c}" in readme, c


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebooks_open_clean_and_show_a_preview_before_running(nb):
    """The installed kernel's display name (so JupyterLab does not open the notebook modified), no stored
    widget state (no disconnected view that looks live), and every explorer's saved output carries a PNG
    preview beside the widget view (what an untrusted notebook or a web page shows)."""
    d = json.loads(nb.read_text())
    assert d["metadata"]["kernelspec"]["display_name"] == "Python 3 (ipykernel)"
    assert "widgets" not in d["metadata"]
    for c in d["cells"]:
        if c["cell_type"] == "code" and ".widget()" in "".join(c["source"]):
            bundles = [o.get("data", {}) for o in c["outputs"]]
            assert any("application/vnd.jupyter.widget-view+json" in b and "image/png" in b for b in bundles), \
                f"{nb.name}: an explorer cell was saved without its preview"
