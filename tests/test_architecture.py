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
TIERS = tuple(launchlab.LAYERS)                      # core, kernels, sections, faces: the order imports go down


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _target(mod: str, name: str) -> str:
    """`from mod import name`: the module imported (mod.name when that is a module, else mod)."""
    return f"{mod}.{name}" if f"{mod}.{name}" in MODULES else mod


def _imports(path: Path):
    """(launchlab module, in a function?) for every import of a launchlab module in a file."""
    tree = ast.parse(path.read_text())
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inner = {id(n) for f in funcs for n in ast.walk(f)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level:
            raise AssertionError(f"{path.relative_to(ROOT)}:{n.lineno}: a relative import (write it absolute)")
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "launchlab":
            out += [(_target(n.module, a.name), id(n) in inner) for a in n.names]
        elif isinstance(n, ast.Import):
            out += [(a.name, id(n) in inner) for a in n.names if a.name.split(".")[0] == "launchlab"]
    return out


GRAPH = {m: _imports(p) for m, p in MODULES.items()}
CODE = {m: deps for m, deps in GRAPH.items() if m not in ("launchlab", "launchlab.__main__")}


def tier(module: str) -> int:
    """The tier a module belongs to, from its folder: launchlab.<tier>.... (the CLI is a face)."""
    if module == "launchlab.__main__":
        return TIERS.index("faces")
    return TIERS.index(module.split(".")[1])


def section_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "sections" else None


def test_no_module_directly_under_the_package():
    loose = sorted(p.name for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert not loose, f"modules directly under launchlab/: {loose} (each belongs in a tier's folder)"


def test_every_folder_is_a_tier():
    folders = sorted(p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(TIERS), folders


def test_the_package_docstring_names_every_tier_and_section_folder():
    for t in TIERS:
        assert re.search(rf"^{t}/", launchlab.__doc__, re.M), t
    for p in sorted((PKG / "sections").glob("s[0-9][0-9]_*")):
        assert p.name in launchlab.__doc__, p.name


@pytest.mark.parametrize("module", sorted(CODE))
def test_no_upward_import(module):
    """core imports only core; kernels import core; sections import core, kernels and sections; faces anything."""
    for dep, _ in GRAPH[module]:
        if dep == "launchlab":
            continue
        assert tier(dep) <= tier(module), f"{module} ({TIERS[tier(module)]}) imports {dep} ({TIERS[tier(dep)]})"


def _find_cycle(edges: dict) -> list | None:
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in sorted(edges.get(m, ())):
            if state.get(d) == "open":
                return path + [m, d]
            if d not in state:
                found = visit(d, path + [m])
                if found:
                    return found
        state[m] = "done"
        return None
    for m in sorted(edges):
        if m not in state:
            found = visit(m, [])
            if found:
                return found
    return None


def test_no_import_cycle():
    edges = {m: {d for d, _ in deps} - {m} for m, deps in GRAPH.items()}
    cycle = _find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_cycle_between_section_folders():
    """A section may build on another's door (the lab on §6's), never both ways round."""
    edges: dict = {}
    for m, deps in CODE.items():
        a = section_of(m)
        if a:
            edges.setdefault(a, set()).update({section_of(d) for d, _ in deps if section_of(d) not in (None, a)})
    cycle = _find_cycle(edges)
    assert cycle is None, "sections import each other in a cycle: " + " -> ".join(cycle)


def test_sibling_imports_are_at_module_level():
    """Only the CLI imports a command's modules lazily (so `gates` does not load matplotlib)."""
    lazy = {m: [d for d, inner in deps if inner] for m, deps in GRAPH.items() if m != "launchlab.__main__"}
    assert not {m: d for m, d in lazy.items() if d}


def test_mode_only_decides():
    assert GRAPH["launchlab.core.mode"] == []


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
    for m in CODE:
        leaf = m.rsplit(".", 1)[-1]
        if leaf != "launchlab" and m.count(".") >= 2:
            assert f"`{leaf}`" in readme, m


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
