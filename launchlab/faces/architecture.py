"""The package's shape, measured from the tree: which module imports which, the tiers they sit in, the
section folders and their registry, and where the mode is read. tests/test_architecture.py keeps the rules
with these measurements, and `summary --json` reports them under "architecture".

    tiers       core < kernels < sections < faces (launchlab/__init__.py): a module imports only from its own
                tier or a lower one; section folders import each other without a cycle; a face reaches the
                sections only through the registry (launchlab.sections), never a section's module
    mode        only core/mode.py and core/door.py ask which mode the process is in (`is_live()`, `current()`,
                a `.live` attribute); everything else asks `mode.choose` or a door's `choose`, or refuses with
                `mode.require_live`
"""
from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import launchlab
from launchlab.core import paths
from launchlab.faces import template

TIERS = tuple(launchlab.LAYERS)
MODE_DECIDERS = ("launchlab.core.mode", "launchlab.core.door")
MODE_READS = ("is_live", "current")          # calls that ask which mode this is (and any `.live` attribute)


def module_name(path: Path, root: Path = paths.ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


@cache
def modules(root: Path = paths.ROOT) -> dict[str, Path]:
    """{dotted module name: file} for every module of the package."""
    return {module_name(p, root): p for p in sorted((root / "launchlab").rglob("*.py"))}


def imports(path: Path, known: dict[str, Path]) -> list[tuple[str, bool]]:
    """(launchlab module, inside a function?) for every import of a launchlab module in a file. A relative
    import raises: the package writes every import absolute."""
    tree = ast.parse(path.read_text())
    inner = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level:
            raise ValueError(f"{path}:{n.lineno}: a relative import (write it absolute)")
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "launchlab":
            for a in n.names:
                full = f"{n.module}.{a.name}"
                out.append((full if full in known else n.module, id(n) in inner))
        elif isinstance(n, ast.Import):
            out += [(a.name, id(n) in inner) for a in n.names if a.name.split(".")[0] == "launchlab"]
    return out


@cache
def graph(root: Path = paths.ROOT) -> dict[str, list[tuple[str, bool]]]:
    known = modules(root)
    return {m: imports(p, known) for m, p in known.items()}


def tier(module: str) -> int | None:
    """A module's tier from its folder (launchlab.<tier>....); the CLI is a face; the package itself none."""
    if module == "launchlab.__main__":
        return TIERS.index("faces")
    parts = module.split(".")
    return TIERS.index(parts[1]) if len(parts) > 1 and parts[1] in TIERS else None


def section_of(module: str) -> str | None:
    """The section folder a module belongs to (launchlab.sections.<folder>....), or None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "sections" else None


def upward_imports(root: Path = paths.ROOT) -> list[tuple[str, str]]:
    """(module, what it imports) for every import of a higher tier, or of a section module by a face."""
    out = []
    for m, deps in graph(root).items():
        t = tier(m)
        for d, _ in deps:
            td = tier(d)
            if t is None or td is None:
                continue
            if td > t or (t == TIERS.index("faces") and section_of(d)):
                out.append((m, d))
    return out


def _cycle(edges: dict) -> list | None:
    state: dict = {}

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


def import_cycles(root: Path = paths.ROOT) -> list[list[str]]:
    """Import cycles between modules, and between section folders (each at most one, the first found)."""
    g = graph(root)
    mods = {m: {d for d, _ in deps} - {m} for m, deps in g.items()}
    folders: dict = {}
    for m, deps in g.items():
        a = section_of(m)
        if a:
            folders.setdefault(a, set()).update({section_of(d) for d, _ in deps} - {None, a})
    return [c for c in (_cycle(mods), _cycle(folders)) if c]


def mode_reads(root: Path = paths.ROOT) -> list[str]:
    """'file:line what' for every place outside mode/door that asks which mode this is."""
    out = []
    for m, p in modules(root).items():
        if m in MODE_DECIDERS:
            continue
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.Attribute) and (n.attr == "live" or
                                                 (n.attr in MODE_READS and getattr(n.value, "id", "") == "mode")):
                out.append(f"{p.relative_to(root)}:{n.lineno} .{n.attr}")
    return out


def section_folders(root: Path = paths.ROOT) -> list[str]:
    return sorted(p.name for p in (root / "launchlab" / "sections").iterdir()
                  if p.is_dir() and re.fullmatch(r"s\d\d_\w+", p.name))


def headline(root: Path = paths.ROOT) -> dict:
    """The figures `summary --json` reports under "architecture"."""
    return {"section_folders": len(section_folders(root)),
            "files_outside_folder_to_add_a_section": len(template.OUTSIDE),
            "mode_reads_outside_mode_door": len(mode_reads(root)),
            "import_cycles": len(import_cycles(root)),
            "upward_imports": len(upward_imports(root))}
