"""The package's shape: three tiers, no upward import, no cycle, one door per section, and notebooks that
never branch on the mode or read a recording's JSON."""
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import launchlab
from launchlab import __main__ as cli

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "launchlab"
TIER = {m: i for i, (_, mods) in enumerate(launchlab.LAYERS.items()) for m in mods}


def _imports(path: Path):
    """(sibling module, in a function?) for every import of a launchlab module in a file."""
    tree = ast.parse(path.read_text())
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inner = {id(n) for f in funcs for n in ast.walk(f)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level == 1:
            mods = [n.module] if n.module else [a.name for a in n.names]
            out += [(m.split(".")[0], id(n) in inner) for m in mods]
    return out


GRAPH = {p.stem: _imports(p) for p in PKG.glob("*.py") if p.stem != "__init__"}


def test_every_module_is_in_exactly_one_tier():
    listed = [m for mods in launchlab.LAYERS.values() for m in mods]
    assert sorted(listed) == sorted(GRAPH), set(listed) ^ set(GRAPH)
    assert len(listed) == len(set(listed))


def test_the_package_docstring_names_every_module():
    for m in GRAPH:
        assert re.search(rf"^\s+{re.escape(m)}\s", launchlab.__doc__, re.M), m


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_no_upward_import(module):
    """core imports only core; sections import core and sections; the face imports anything."""
    for dep, _ in GRAPH[module]:
        assert TIER[dep] <= TIER[module], f"{module} ({TIER[module]}) imports {dep} ({TIER[dep]})"


def test_no_import_cycle():
    edges = {m: {d for d, _ in deps} for m, deps in GRAPH.items()}
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in edges[m]:
            if state.get(d) == "open":
                raise AssertionError("import cycle: " + " -> ".join(path + [m, d]))
            if d not in state:
                visit(d, path + [m])
        state[m] = "done"
    for m in edges:
        if m not in state:
            visit(m, [])


def test_sibling_imports_are_at_module_level():
    """Only the CLI imports a command's modules lazily (so `gates` does not load matplotlib)."""
    lazy = {m: [d for d, inner in deps if inner] for m, deps in GRAPH.items() if m != "__main__"}
    assert not {m: d for m, d in lazy.items() if d}


def test_mode_only_decides():
    assert GRAPH["mode"] == []


SECTION_MODULES = ("instruments", "bandwidth", "waves", "occupancy_probe", "achieved", "rmsnorm", "kda", "derive",
                   "reassociation")


@pytest.mark.parametrize("name", SECTION_MODULES)
def test_every_section_has_one_door_with_the_three_calls(name):
    mod = __import__(f"launchlab.{name}", fromlist=["DOOR"])
    from launchlab.door import Door
    assert isinstance(mod.DOOR, Door)
    assert mod.measure is mod.DOOR.measure and mod.data == mod.DOOR.data and mod.recorded == mod.DOOR.recorded
    assert callable(mod.headline)


def test_the_recorder_is_a_table_of_doors():
    from launchlab import recorder
    doors = [d for ds in recorder.RECORDINGS.values() for d in ds]
    for name in SECTION_MODULES:
        mod = __import__(f"launchlab.{name}", fromlist=["DOOR"])
        assert mod.DOOR in doors, name
        assert mod.DOOR.recording in recorder.RECORDINGS


# ------------------------------------------------------------------ notebooks
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
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
    for m in GRAPH:
        if m != "__main__":
            assert f"`{m}`" in readme, m


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
