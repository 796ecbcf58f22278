"""The audit's step 8 on any source tree: every kernel launch site, and whether its grid is built from the
dimension that was sharded (the §5 audit, pointed at code the course did not write).

Found statically, file by file:
- Python: `k.launch(grid, block, ...)` (the course's checked launches), `kernel[grid](...)` in a file that imports
  triton (Triton: a tuple, or a lambda of the meta-parameters), `kernel[grid, block](...)` in a file that imports
  numba (Numba), and a CuPy RawKernel called as `k(grid, block, args)` where `k` is bound to `RawKernel(...)` or `.get_function(...)` in the
  same file. The grid's names are followed back through the assignments of the enclosing function.
- CUDA C++ (.cu .cuh .cpp .cc .h .hpp): `kernel<<<grid, block, ...>>>(...)`, `cudaLaunchKernel(f, grid, ...)` and
  `cuLaunchKernel(f, gx, gy, gz, ...)`. The grid's identifiers are followed back through `dim3 g(...)`,
  `dim3 g{...}` and `g = ...;` lines of the same file above the launch.

A static grep cannot see (BLIND, printed with every report): kernels launched inside libraries -- cuBLAS, cuDNN,
NCCL, PyTorch's own ATen ops -- whose grid is chosen at run time from the shapes they are given (the profiler's
record shows it, not the source); Triton's autotuned launches, whose grid reads META values the autotuner picks
(flagged); grids computed in another file or carried in data structures; and kernels compiled from strings
assembled at run time.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from launchlab.core import paths, width

BLIND = ("kernels launched inside libraries (cuBLAS, cuDNN, NCCL, PyTorch's ATen ops): their grid is chosen at run "
         "time from the shapes they are given -- read it from the profiler's record (launchlab.audit.load)",
         "Triton's autotuned launches: the grid reads META values the autotuner picks at run time (flagged "
         "'autotuned')",
         "grids computed in another file, or carried in data structures between functions",
         "kernels compiled from source strings assembled at run time")
PY_SUFFIXES = (".py",)
CPP_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp")
SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", "build", ".tox", ".mypy_cache"}


class SitesError(ValueError):
    pass


@dataclass
class Site:
    file: str                  # relative to the tree
    line: int
    function: str              # the enclosing function (Python), or "" (C++)
    kind: str                  # "launch", "triton", "numba", "cupy", "<<<>>>", "cudaLaunchKernel", "cuLaunchKernel"
    kernel: str                # the kernel as written at the site
    grid: str                  # the grid expression as written
    names: set = field(default_factory=set)    # every name the grid derives from, followed back
    flags: list = field(default_factory=list)  # what the grep could not follow ("autotuned", ...)

    def mentions(self, dimension: str) -> bool:
        return mentions(dimension, self.names | {self.grid})


def mentions(dimension: str, names) -> bool:
    """Whether any name is the dimension as an identifier part: 'head' in n_head, heads, NUM_HEADS, head_dim."""
    if not re.fullmatch(r"[A-Za-z]\w*", dimension or ""):
        raise SitesError(f"a dimension is an identifier such as 'head' or 'expert', got {dimension!r}")
    pat = re.compile(rf"(^|_|\b){re.escape(dimension)}($|_|s\b|\b)", re.I)
    return any(pat.search(str(n)) for n in names)


# ------------------------------------------------------------------ Python
def names_of(node) -> set[str]:
    """The names and attribute names an expression reads."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return out


def closure(scope: ast.AST, start: set[str]) -> set[str]:
    """Names reachable backwards through the simple assignments inside `scope`."""
    assigns: dict[str, set[str]] = {}
    for n in ast.walk(scope):
        if isinstance(n, ast.Assign):
            src = names_of(n.value)
            for t in n.targets:
                for tn in ast.walk(t):
                    if isinstance(tn, ast.Name):
                        assigns.setdefault(tn.id, set()).update(src)
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign)) and isinstance(n.target, ast.Name) and n.value:
            assigns.setdefault(n.target.id, set()).update(names_of(n.value))
    seen, todo = set(start), list(start)
    while todo:
        x = todo.pop()
        for y in assigns.get(x, ()):
            if y not in seen:
                seen.add(y)
                todo.append(y)
    return seen


def _callee(node) -> str:
    f = node.func if isinstance(node, ast.Call) else node
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _flags(scope, grid) -> list[str]:
    """What the grep could not follow from this grid."""
    out = []
    params = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = scope.args
        params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    names = names_of(grid)
    if names and names <= params:
        out.append(f"the grid is a parameter of {scope.name}(): its callers choose it (not followed)")
    attrs = [ast.unparse(n) for n in ast.walk(grid) if isinstance(n, ast.Attribute)]
    if attrs:
        out.append(f"read from {', '.join(sorted(set(attrs))[:3])}: computed where that object is made (not followed)")
    return out


def _imports(tree: ast.AST, module: str) -> bool:
    """Whether the file imports `module` (import m, import m.x, from m import ..., from m.x import ...)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Import) and any(a.name.split(".")[0] == module for a in n.names):
            return True
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == module:
            return True
    return False


def _python_sites(path: Path, rel: str) -> list[Site] | None:
    """The file's launch sites, or None when it is not Python the parser reads."""
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except (SyntaxError, ValueError):
        return None
    numba, triton = _imports(tree, "numba"), _imports(tree, "triton")
    raw = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
           and _callee(n.value) in ("RawKernel", "get_function") for t in n.targets if isinstance(t, ast.Name)}
    autotuned = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                 and any("autotune" in ast.unparse(d) for d in n.decorator_list)}
    scopes = [(tree, "<module>")] + [(n, n.name) for n in ast.walk(tree)
                                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    out, seen = [], set()
    for scope, fname in reversed(scopes):              # innermost function first: each call listed once
        for c in ast.walk(scope):
            if not isinstance(c, ast.Call) or id(c) in seen:
                continue
            f, grid, kind, kernel, flags = c.func, None, "", "", []
            if isinstance(f, ast.Attribute) and f.attr == "launch" and len(c.args) >= 2:
                grid, kind, kernel = c.args[0], "launch", ast.unparse(f.value)
            elif isinstance(f, ast.Subscript):
                sl, kernel = f.slice, ast.unparse(f.value)
                if numba and isinstance(sl, ast.Tuple) and len(sl.elts) >= 2:
                    grid, kind = sl.elts[0], "numba"
                elif triton:                           # elsewhere x[i]() is an indexed call, not a launch
                    grid, kind = sl, "triton"
                    if kernel.split(".")[-1] in autotuned:
                        flags.append("autotuned: the grid reads META values chosen at run time")
            elif isinstance(f, ast.Name) and f.id in raw and len(c.args) >= 2:
                grid, kind, kernel = c.args[0], "cupy", f.id
            if grid is None:
                continue
            seen.add(id(c))
            out.append(Site(rel, c.lineno, fname, kind, kernel, ast.unparse(grid), closure(scope, names_of(grid)),
                            flags + _flags(scope, grid)))
    return sorted(out, key=lambda s: s.line)


# ------------------------------------------------------------------ CUDA C++
_IDENT = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = {"dim3", "int", "unsigned", "size_t", "const", "auto", "static_cast", "min", "max", "std", "void",
             "long", "uint32_t", "int64_t", "int32_t", "sizeof", "return", "if", "else"}


def _split_top(s: str) -> list[str]:
    """Split at commas outside (), [], {} and <>."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return out


def _balanced(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _follow_cpp(text: str, upto: int, idents: set[str], depth: int = 4) -> set[str]:
    """Identifiers reachable backwards through `dim3 x(...)`, `dim3 x{...}` and `x = ...;` above `upto`."""
    before, seen, todo = text[:upto], set(idents), list(idents)
    while todo and depth > 0:
        nxt = []
        for x in todo:
            for m in re.finditer(rf"\b{re.escape(x)}\s*(?:\(([^;]*)\)|\{{([^;]*)\}}|=\s*([^;=][^;]*));", before):
                for y in _IDENT.findall(next(g for g in m.groups() if g is not None)):
                    if y not in seen and y not in _KEYWORDS:
                        seen.add(y)
                        nxt.append(y)
        todo, depth = nxt, depth - 1
    return seen


def _cpp_sites(path: Path, rel: str) -> list[Site]:
    text = path.read_text(errors="replace")
    code = re.sub(r"//[^\n]*", lambda m: " " * len(m.group()), text)
    code = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), code, flags=re.S)
    out = []

    def add(pos, kind, kernel, grid_text):
        idents = {y for y in _IDENT.findall(grid_text) if y not in _KEYWORDS}
        out.append(Site(rel, code.count("\n", 0, pos) + 1, "", kind, kernel.strip(), grid_text.strip(),
                        _follow_cpp(code, pos, idents)))

    for m in re.finditer(r"([A-Za-z_][\w:]*(?:\s*<[^<>;]*>)?)\s*<<<(.*?)>>>", code, flags=re.S):
        args = _split_top(m.group(2))
        add(m.start(), "<<<>>>", m.group(1), args[0])
    for m in re.finditer(r"\b(cudaLaunchKernel|cuLaunchKernel)\s*\(", code):
        args = _split_top(code[m.end():_balanced(code, m.end() - 1) - 1])
        if m.group(1) == "cudaLaunchKernel" and len(args) >= 3:
            add(m.start(), "cudaLaunchKernel", args[0], args[1])
        elif m.group(1) == "cuLaunchKernel" and len(args) >= 7:
            add(m.start(), "cuLaunchKernel", args[0], ", ".join(args[1:4]))
    return sorted(out, key=lambda s: s.line)


# ------------------------------------------------------------------ the tree
def scan(root) -> tuple[list[Site], list[str]]:
    """(every launch site the grep finds under `root` -- a folder or one file --, the Python files it could not
    parse)."""
    root = Path(root)
    if not root.exists():
        raise SitesError(f"no source tree at {root}")
    files = [root] if root.is_file() else sorted(
        p for p in root.rglob("*") if p.is_file() and not (set(p.relative_to(root).parts[:-1]) & SKIP_DIRS))
    out, unparsed = [], []
    for p in files:
        rel = p.name if root.is_file() else p.relative_to(root).as_posix()
        if p.suffix in PY_SUFFIXES:
            found = _python_sites(p, rel)
            if found is None:
                unparsed.append(rel)
            else:
                out += found
        elif p.suffix in CPP_SUFFIXES:
            out += _cpp_sites(p, rel)
    return out, unparsed


def sites(root) -> list[Site]:
    return scan(root)[0]


def grep(root, dimension: str) -> list[tuple[Site, bool]]:
    """Every launch site under `root`, and whether its grid derives from `dimension` (e.g. 'head')."""
    mentions(dimension, ())                            # a bad dimension is refused before the walk
    return [(s, s.mentions(dimension)) for s in sites(root)]


def report(root, dimension: str, only_hits: bool = False) -> str:
    """Step 8 as printed: every launch site (`only_hits`: those whose grid is built from `dimension`), each on
    lines of at most width.WIDTH characters, then what a static grep cannot see."""
    mentions(dimension, ())
    found, unparsed = scan(root)
    rows = [(s, s.mentions(dimension)) for s in found]
    hit = [s for s, h in rows if h]
    try:                                  # the course's own tree by its name in the checkout, not the machine's path
        shown = Path(root).resolve().relative_to(paths.ROOT.resolve()).as_posix() or "."
    except ValueError:
        shown = str(root)
    out = [width.fit(f"{len(rows)} launch sites under {shown}; {len(hit)} with a grid built from '{dimension}':",
                     hang=2)]
    for s, h in rows:
        if only_hits and not h:
            continue
        where = f"{s.file}:{s.line}" + (f" {s.function}()" if s.function else "")
        out.append(width.fit(f"  {'*' if h else ' '} {where:<48} {s.kind:<16} grid = {s.grid[:50]}"
                             + (f"   [{'; '.join(s.flags)}]" if s.flags else ""), hang=6))
    if unparsed:
        out.append(width.fit(f"{len(unparsed)} Python file(s) the parser could not read, not searched: "
                             f"{', '.join(unparsed[:5])}", hang=2))
    out.append("what a static grep cannot see:")
    out += [width.fit(f"  - {b}", hang=4) for b in BLIND]
    return "\n".join(out)
