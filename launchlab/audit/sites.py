"""The audit's step 8 on any source tree: every kernel launch site, and whether its grid is built from the
dimension that was sharded (the §5 audit, pointed at code the course did not write).

Found statically, file by file (GREP_APIS lists every form):
- Python: `k.launch(grid, block, ...)` (the course's checked launches) and `.launch(grid=..., block=...)` with
  keywords (CuTe-DSL's `kernel(...).launch(grid=[...], block=[...])`, a compiled module's `.launch(grid=, kernel=)`);
  `kernel[grid](...)` where `kernel` is a function decorated `@triton.jit` somewhere in the tree (Triton: a tuple, a
  lambda of the meta-parameters, or a nested `def grid(meta)` -- followed into its return); `kernel[grid, block](...)`
  in a file that imports numba; a CuPy RawKernel called as `k(grid, block, args)` where `k` is bound to
  `RawKernel(...)` or `.get_function(...)` in the same file; cuTile's `ct.launch(stream, grid, kernel, args)`; and
  TileLang's `with T.Kernel(gx, gy, ..., threads=...)`. The grid's names are followed back through the assignments
  of the enclosing function.
- CUDA C++ (.cu .cuh .cpp .cc .h .hpp): `kernel<<<grid, block, ...>>>(...)`, `cudaLaunchKernel` and
  `cudaLaunchCooperativeKernel(f, grid, ...)`, `cuLaunchKernel(f, gx, gy, gz, ...)`, `cudaLaunchKernelEx` /
  `cudaLaunchKernelExC(&config, f, ...)` (the grid read from the config: `cudaLaunchConfig_t c = {grid, ...}` or
  `c.gridDim = ...`), `cuLaunchKernelEx(&config, f, ...)` (`config.gridDimX/Y/Z`), and CUTLASS's
  `launch_kernel_on_cluster(params, f, ...)` (`ClusterLaunchParams params = {grid, ...}`). A function-like macro
  whose body launches (`#define LAUNCH_KERNEL(cfg, k, ...) cudaLaunchKernelEx(cfg, k, ...)`) is followed to each
  place it is invoked, which is the site; other macros invoked in the function are expanded before the follow. The
  grid's identifiers are followed back through the enclosing function only, the last assignment before the launch,
  never into the name of a function or macro it calls (its arguments are followed).

Every site whose grid the grep cannot follow says why (`unfollowed`): a parameter its callers choose, a launch
config built in another function, a field of an object made elsewhere, a macro no file invokes.

A static grep cannot see (BLIND, printed with every report): kernels launched inside libraries -- cuBLAS, cuDNN,
NCCL, PyTorch's own ATen ops -- whose grid is chosen at run time from the shapes they are given (the profiler's
record shows it, not the source); Triton's autotuned launches, whose grid reads META values the autotuner picks
(flagged); and kernels compiled from strings assembled at run time.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from launchlab.core import paths, width

BLIND = ("kernels launched inside libraries (cuBLAS, cuDNN, NCCL, PyTorch's ATen ops): their grid is chosen at run "
         "time from the shapes they are given -- read it from the profiler's record (launchlab.audit.load)",
         "Triton's autotuned launches: the grid reads META values the autotuner picks at run time (flagged "
         "'autotuned')",
         "grids chosen in another function or file and passed in, or carried in objects: each such site is listed "
         "and marked 'unfollowed' with the reason",
         "kernels compiled from source strings assembled at run time")
GREP_APIS = ("<<<>>>", "cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaLaunchKernelEx", "cudaLaunchKernelExC",
             "cuLaunchKernel", "cuLaunchKernelEx", "cutlass::launch_kernel_on_cluster", "a macro whose body launches",
             "launch(grid, block)", "launch(grid=, block=) (CuTe-DSL)", "triton kernel[grid]",
             "triton def grid(meta)", "numba kernel[grid, block]", "cupy RawKernel(grid, block, args)",
             "cuTile ct.launch(stream, grid, kernel, args)", "TileLang with T.Kernel(...)")
PY_SUFFIXES = (".py",)
CPP_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp")
SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", "build", ".tox", ".mypy_cache"}


class SitesError(ValueError):
    pass


@dataclass
class Site:
    file: str                  # relative to the tree
    line: int
    function: str              # the enclosing function, or "" at a file's top level
    kind: str                  # the launch API: "launch", "triton", "numba", "cupy", "ct.launch", "T.Kernel",
                               # "<<<>>>", "cudaLaunchKernel", "cudaLaunchKernelEx", "cuLaunchKernelEx", ...
    kernel: str                # the kernel as written at the site
    grid: str                  # the grid expression as written ("" where it could not be read)
    names: set = field(default_factory=set)    # every name the grid derives from, followed back
    flags: list = field(default_factory=list)  # what the grid depends on at run time ("autotuned", ...)
    unfollowed: str | None = None              # why the grid could not be followed, or None
    via: str = ""              # the macro the launch is written through

    @property
    def api(self) -> str:
        return self.kind + (f" via {self.via}" if self.via else "")

    def mentions(self, dimension: str) -> bool:
        return mentions(dimension, self.names)

    def to_dict(self, dimension: str) -> dict:
        return {"file": self.file, "line": self.line, "function": self.function, "api": self.api,
                "kernel": self.kernel or None, "grid": self.grid, "from_dimension": self.mentions(dimension),
                "unfollowed": self.unfollowed}


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


def _called(node) -> set[str]:
    """The names an expression only calls (cdiv in triton.cdiv(...), len, min): not where a grid's size comes from."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            while isinstance(f, ast.Attribute):
                out.add(f.attr)
                f = f.value
            if isinstance(f, ast.Name):
                out.add(f.id)
    return out


def _params(scope) -> set[str]:
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return set()
    a = scope.args
    return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}


def _assigned(scope) -> set[str]:
    return {t.id for n in ast.walk(scope) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For,
                                                             ast.With, ast.NamedExpr))
            for tgt in (n.targets if isinstance(n, ast.Assign) else [getattr(n, "target", None)]
                        if not isinstance(n, ast.With) else [i.optional_vars for i in n.items])
            if tgt is not None for t in ast.walk(tgt) if isinstance(t, ast.Name)}


def _unfollowed(scope, fname: str, grid) -> str | None:
    """Why this grid cannot be followed (None: it can): one name that is a parameter its callers choose, or an
    object's field (`p.grid`, `self.grid`) computed where that object is made."""
    if isinstance(grid, ast.Name) and grid.id in _params(scope) and grid.id not in _assigned(scope):
        return f"the grid is a parameter of {fname}(): its callers choose it"
    parts = grid.elts if isinstance(grid, (ast.Tuple, ast.List)) and grid.elts else [grid]
    if all(isinstance(e, ast.Attribute) for e in parts):
        attrs = sorted({ast.unparse(e) for e in parts})
        return f"read from {', '.join(attrs[:3])}: computed where that object is made"
    return None


@dataclass
class _PyFile:
    """What one walk of a Python file finds: the modules it imports (top-level names), the names it binds
    cuda.tile to, its @triton.jit functions (and the autotuned ones), its CuPy RawKernels, and every node with the
    function it is in."""
    imports: set
    tile: set
    jit: set
    tuned: set
    raw: set
    nodes: list                # (node, the innermost function holding it, or the module)


def _read_py(tree: ast.AST) -> _PyFile:
    f = _PyFile(set(), set(), set(), set(), set(), [])
    stack = [(tree, tree)]
    while stack:
        node, scope = stack.pop()
        f.nodes.append((node, scope))
        if isinstance(node, ast.Import):
            f.imports |= {a.name.split(".")[0] for a in node.names}
            f.tile |= {a.asname or a.name for a in node.names if a.name == "cuda.tile"}
        elif isinstance(node, ast.ImportFrom):
            f.imports.add((node.module or "").split(".")[0])
            if node.module == "cuda":
                f.tile |= {a.asname or a.name for a in node.names if a.name == "tile"}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decs = [ast.unparse(d.func if isinstance(d, ast.Call) else d).split(".")[-1] for d in node.decorator_list]
            if any(d in ("jit", "autotune", "heuristics") for d in decs):
                f.jit.add(node.name)
                if "autotune" in decs:
                    f.tuned.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and _callee(node.value) in ("RawKernel", "get_function"):
            f.raw |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
        stack += [(c, inner) for c in ast.iter_child_nodes(node)]
    if "triton" not in f.imports:                      # a jit of numba's or JAX's is not Triton's
        f.jit, f.tuned = set(), set()
    return f


def _parse(path: Path):
    try:
        return ast.parse(path.read_text(errors="replace"))
    except (SyntaxError, ValueError):
        return None


def jitted(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(the functions a file decorates as Triton kernels -- @triton.jit, @jit imported from triton, with or
    without arguments, @triton.autotune / @triton.heuristics over them --, those of them autotuned). Empty for a
    file that does not import triton."""
    if tree is None:
        return set(), set()
    f = _read_py(tree)
    return f.jit, f.tuned


def _grid_function(tree, scope, name: str):
    """A `def name(meta): return ...` in `scope` or at the module's top level (Triton's callable grid)."""
    for sc in (scope, tree):
        for n in getattr(sc, "body", []):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name:
                return n
    return None


def _python_sites(path: Path, rel: str, tree=None, triton_jit: set | None = None,
                  autotuned: set | None = None, info: _PyFile | None = None) -> list[Site] | None:
    """The file's launch sites, or None when it is not Python the parser reads. `triton_jit`: the names of every
    @triton.jit function in the tree (this file's own when not given)."""
    tree = _parse(path) if tree is None else tree
    if tree is None:
        return None
    f = _read_py(tree) if info is None else info
    triton_jit = f.jit | (triton_jit or set())
    autotuned = f.tuned | (autotuned or set())
    numba, tilelang, cute = "numba" in f.imports, "tilelang" in f.imports, "cutlass" in f.imports
    out = []
    for c, scope in f.nodes:
        if not isinstance(c, (ast.Call, ast.With)):
            continue
        fname = scope.name if scope is not tree else "<module>"
        grid, kind, kernel, flags, extra, shown = None, "", "", [], set(), None
        if isinstance(c, ast.With):
            if not tilelang:
                continue
            k = next((i.context_expr for i in c.items if isinstance(i.context_expr, ast.Call)
                      and _callee(i.context_expr) == "Kernel"), None)
            if k is None or not k.args:
                continue
            grid, kind, kernel = ast.Tuple(elts=list(k.args), ctx=ast.Load()), "T.Kernel", fname
        else:
            fn = c.func
            kw = {k.arg: k.value for k in c.keywords if k.arg}
            if isinstance(fn, ast.Attribute) and fn.attr == "launch" and isinstance(fn.value, ast.Name) \
                    and fn.value.id in f.tile:
                if len(c.args) < 3:
                    continue
                grid, kind, kernel = c.args[1], "ct.launch", ast.unparse(c.args[2])
            elif isinstance(fn, ast.Attribute) and fn.attr == "launch" and "grid" in kw:
                grid, kind = kw["grid"], "launch(grid=)" + (" CuTe-DSL" if cute else "")
                kernel = ast.unparse(kw.get("kernel", fn.value.func if isinstance(fn.value, ast.Call) else fn.value))
            elif isinstance(fn, ast.Attribute) and fn.attr == "launch" and len(c.args) >= 2:
                grid, kind, kernel = c.args[0], "launch", ast.unparse(fn.value)
            elif isinstance(fn, ast.Subscript):
                sl, kernel = fn.slice, ast.unparse(fn.value)
                if numba and isinstance(sl, ast.Tuple) and len(sl.elts) >= 2:
                    grid, kind = sl.elts[0], "numba"
                elif kernel.split(".")[-1] in triton_jit:      # x[i](...) is a launch only of a @triton.jit name
                    grid, kind = sl, "triton"
                    if kernel.split(".")[-1] in autotuned:
                        flags.append("autotuned: the grid reads META values chosen at run time")
                    if isinstance(sl, ast.Name) and (g := _grid_function(tree, scope, sl.id)) is not None:
                        rets = [r.value for r in ast.walk(g) if isinstance(r, ast.Return) and r.value]
                        extra = closure(g, set().union(*(names_of(r) for r in rets))) if rets else set()
                        kind = "triton def grid(meta)"
                        shown = f"{sl.id}() returns {ast.unparse(rets[-1])}" if rets else None
            elif isinstance(fn, ast.Name) and fn.id in f.raw and len(c.args) >= 2:
                grid, kind, kernel = c.args[0], "cupy", fn.id
        if grid is None:
            continue
        names = closure(scope, (names_of(grid) - _called(grid)) | extra) | extra
        why = None if extra else _unfollowed(scope, fname, grid)
        out.append(Site(rel, c.lineno, fname if fname != "<module>" else "", kind, kernel,
                        shown or ast.unparse(grid), names, flags, why))
    return sorted(out, key=lambda s: s.line)


# ------------------------------------------------------------------ CUDA C++
_IDENT = re.compile(r"(?<![\w'])[A-Za-z_]\w*")          # a member's name too: params.h_q reads h_q
_KEYWORDS = {"dim3", "int", "unsigned", "size_t", "const", "auto", "static_cast", "min", "max", "std", "void",
             "long", "uint32_t", "int64_t", "int32_t", "uint64_t", "int16_t", "uint16_t", "int8_t", "uint8_t",
             "sizeof", "return", "if", "else", "float", "double", "bool", "char", "short", "signed", "constexpr",
             "static", "inline", "template", "typename", "struct", "class", "this", "nullptr", "true", "false",
             "new", "delete", "decltype", "__restrict__", "volatile"}
_CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "static_assert",
            "defined", "else", "do"}
_LAUNCH_CALL = re.compile(r"(?<![\w.])(?:cutlass::)?(cudaLaunchKernelExC|cudaLaunchKernelEx|cudaLaunchCooperativeKernel|"
                          r"cudaLaunchKernel|cuLaunchKernelEx|cuLaunchKernel|launch_kernel_on_cluster)\s*"
                          r"(?:<[^;()]*>)?\s*\(")
_CHEVRONS = re.compile(r"([A-Za-z_][\w:]*(?:\s*<[^<>;]*>)?)\s*<<<(.*?)>>>", re.S)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^)]*)\)((?:[^\n\\]|\\(?!\n))*(?:\\\n(?:[^\n\\]|\\(?!\n))*)*)",
                     re.M)


def _split_top(s: str) -> list[str]:
    """Split at commas outside (), [], {} and template <> (an identifier's `<` up to its `>`; never `->`, `<<`,
    `>>` or a comparison written with spaces)."""
    out, depth, angle, cur = [], 0, 0, []
    for i, ch in enumerate(s):
        prev, nxt = s[i - 1] if i else "", s[i + 1] if i + 1 < len(s) else ""
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "<" and nxt != "<" and prev != "<" and (prev.isalnum() or prev in "_>"):
            angle += 1
        elif ch == ">" and angle and prev != "-" and nxt != ">":
            angle -= 1
        if ch == "," and depth == 0 and angle == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return out


def _balanced(text: str, start: int, pair: str = "()") -> int:
    """The index just past the bracket that closes the one at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == pair[0]:
            depth += 1
        elif text[i] == pair[1]:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _strip(text: str) -> str:
    """Comments and string literals blanked, every character's line kept."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group())                      # noqa: E731
    text = re.sub(r"//[^\n]*", blank, text)
    text = re.sub(r"/\*.*?\*/", blank, text, flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)


@dataclass
class Macro:
    name: str
    params: list
    body: str
    file: str
    span: tuple


def macros_of(code: str, rel: str) -> list[Macro]:
    """The function-like macros a (stripped) file defines, their continuation lines joined."""
    return [Macro(m.group(1), [x.strip() for x in m.group(2).split(",") if x.strip()],
                  m.group(3).replace("\\\n", "\n"), rel, (m.start(), m.end())) for m in _DEFINE.finditer(code)]


def _substitute(m: Macro, args: list[str]) -> str:
    named = [x for x in m.params if not x.endswith("...")]
    table = dict(zip(named, args))
    table["__VA_ARGS__"] = ", ".join(args[len(named):])
    body = m.body.replace("##", " ")
    return re.sub(r"\b\w+\b", lambda w: table.get(w.group(), w.group()), body)


def _invocations(text: str, macros: dict):
    """(start, end, macro, its arguments) of each invocation of a known macro in `text`."""
    if not macros:
        return
    for m in re.finditer(r"(?<![\w.])(" + "|".join(map(re.escape, macros)) + r")\s*\(", text):
        end = _balanced(text, m.end() - 1)
        yield m.start(), end, macros[m.group(1)], _split_top(text[m.end():end - 1])


def expand(text: str, macros: dict, depth: int = 3) -> str:
    """`text` with each invocation of a known function-like macro replaced by its body (arguments substituted),
    `depth` times over."""
    for _ in range(depth):
        parts, last, changed = [], 0, False
        for a, b, m, args in _invocations(text, macros):
            if a < last:
                continue
            parts += [text[last:a], " " + _substitute(m, args) + " "]
            last, changed = b, True
        if not changed:
            return text
        text = "".join(parts) + text[last:]
    return text


def _launches(text: str) -> list[tuple]:
    """(position, api, kernel, grid as written or None, launch config as written or None) of each launch form."""
    out = []
    for m in _CHEVRONS.finditer(text):
        out.append((m.start(), "<<<>>>", m.group(1).strip(), _split_top(m.group(2))[0], None))
    for m in _LAUNCH_CALL.finditer(text):
        api, args = m.group(1), _split_top(text[m.end():_balanced(text, m.end() - 1) - 1])
        if api in ("cudaLaunchKernel", "cudaLaunchCooperativeKernel") and len(args) >= 3:
            out.append((m.start(), api, args[0], args[1], None))
        elif api == "cuLaunchKernel" and len(args) >= 7:
            out.append((m.start(), api, args[0], ", ".join(args[1:4]), None))
        elif api in ("cudaLaunchKernelEx", "cudaLaunchKernelExC", "cuLaunchKernelEx") and len(args) >= 2:
            out.append((m.start(), api, args[1], None, args[0]))
        elif api == "launch_kernel_on_cluster" and len(args) >= 2:
            out.append((m.start(), "cutlass::launch_kernel_on_cluster", args[1], None, args[0]))
    return sorted(out)


@dataclass
class _Scope:
    function: str              # "" at a file's top level
    params: set
    start: int                 # where its body opens (0 at the top level)


def _blocks(code: str) -> list[tuple[int, int]]:
    out, stack = [], []
    for i, ch in enumerate(code):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            out.append((stack.pop(), i))
    return out


def _param_names(text: str) -> set[str]:
    out = set()
    for part in _split_top(text):
        part = part.split("=")[0]
        ids = re.findall(r"[A-Za-z_]\w*", part)
        if ids:
            out.add(ids[-1])
    return out


def _scope(code: str, pos: int, blocks: list) -> _Scope:
    """The function whose body holds `pos` (a lambda's body or a control block is looked through)."""
    for o, c in sorted((b for b in blocks if b[0] < pos < b[1]), reverse=True):
        before = code[max(0, o - 3000):o].rstrip()
        while True:
            cut = re.sub(r"(?:\b(?:const|noexcept|override|final|mutable|volatile)|->\s*[\w:<>,\s*&]+)\s*$", "",
                         before).rstrip()
            if cut == before:
                break
            before = cut
        if not before.endswith(")"):
            continue
        depth, i = 0, len(before) - 1
        while i >= 0:
            depth += {")": 1, "(": -1}.get(before[i], 0)
            if depth == 0:
                break
            i -= 1
        head = before[:i].rstrip()
        name = re.search(r"([A-Za-z_~][\w:~]*)$", head)
        if head.endswith("]") or not name or name.group(1).split("::")[-1] in _CONTROL:
            continue
        return _Scope(name.group(1).split("::")[-1], _param_names(before[i + 1:-1]), o + 1)
    return _Scope("", set(), 0)


def _rhs(text: str) -> set[str]:
    """The identifiers a C++ expression reads: not a called function's or macro's name, not a namespace or a type
    before `::`, not a template's name, not a keyword."""
    out = set()
    for m in _IDENT.finditer(text):
        after = text[m.end():].lstrip()
        if after.startswith(("(", "::")) or m.group() in _KEYWORDS:
            continue
        if after.startswith("<") and not after.startswith("<<") and re.match(r"<[^;()]*>\s*\(", after):
            continue
        out.add(m.group())
    return out


def _last_assignment(scope: str, x: str) -> str | None:
    """The right-hand side of the last assignment to `x` in `scope` (`x = ...;`, `T x = ...;`, `T x(...);`,
    `T x{...};`, `x += ...;`), or None."""
    best, rhs = -1, None
    e = re.escape(x)
    for m in re.finditer(rf"(?<![\w.>]){e}\s*(?:[-+*/%|&^]|<<|>>)?=(?!=)", scope):
        end = m.end()
        depth = 0
        for i in range(end, len(scope)):
            ch = scope[i]
            depth += 1 if ch in "({[" else -1 if ch in ")}]" else 0
            if (ch == ";" and depth <= 0) or depth < 0:
                break
        if m.start() > best:
            best, rhs = m.start(), scope[end:i]
    for m in re.finditer(rf"\b[A-Za-z_][\w:<>]*[\s*&]+{e}\s*([({{])", scope):
        close = _balanced(scope, m.end() - 1, "()" if m.group(1) == "(" else "{}")
        if m.start() > best and scope[close:].lstrip().startswith((";", ",")):
            best, rhs = m.start(), scope[m.end() - 1:close]
    return rhs


def follow(scope: str, idents: set[str], depth: int = 4) -> tuple[set[str], set[str]]:
    """(every identifier reached backwards from `idents` through the last assignments in `scope`, the ones no
    assignment there sets)."""
    seen, todo, leaves = set(idents), list(idents), set()
    for _ in range(depth):
        nxt = []
        for x in todo:
            rhs = _last_assignment(scope, x)
            if rhs is None:
                leaves.add(x)
                continue
            for y in sorted(_rhs(rhs) - seen):
                seen.add(y)
                nxt.append(y)
        todo = nxt
    return seen, leaves | set(todo)


_CONFIG_FIELDS = {"cudaLaunchKernelEx": ("gridDim",), "cudaLaunchKernelExC": ("gridDim",),
                  "cuLaunchKernelEx": ("gridDimX", "gridDimY", "gridDimZ"),
                  "cutlass::launch_kernel_on_cluster": ("grid_dims",)}


def _from_braces(api: str, inner: str) -> str:
    items = _split_top(inner)
    fields = _CONFIG_FIELDS[api]
    named = {re.match(r"\.(\w+)\s*=", it).group(1): it.split("=", 1)[1].strip() for it in items
             if re.match(r"\.(\w+)\s*=", it)}
    if named:
        return ", ".join(named[f] for f in fields if f in named)
    return ", ".join(items[:len(fields)])


def _config_grid(api: str, config: str, scope: str, where: _Scope) -> tuple[str, str | None]:
    """(the grid a launch config holds, why it could not be read or None)."""
    e = config.strip()
    while e.startswith(("&", "(")) and (not e.startswith("(") or _balanced(e, 0) == len(e)):
        e = e[1:-1].strip() if e.startswith("(") else e[1:].strip()
    fn = f"{where.function}()" if where.function else "this file's top level"
    if e.startswith("{"):
        return _from_braces(api, e[1:_balanced(e, 0, "{}") - 1]), None
    if not re.fullmatch(r"[A-Za-z_]\w*", e):
        return "", f"the launch config {e} is an expression the grep does not read"
    fields = _CONFIG_FIELDS[api]
    init, init_at = None, -1
    rhs = _last_assignment(scope, e)
    if rhs is not None:
        init_at = max(m.start() for m in re.finditer(rf"\b{re.escape(e)}\b", scope))
        init = rhs.strip()
    got = {}
    for f in fields:
        for m in re.finditer(rf"(?<![\w.]){re.escape(e)}\s*(?:\.|->)\s*{f}\s*=(?!=)\s*([^;]*);", scope):
            got[f] = (m.start(), m.group(1).strip())
    if got and all(f in got for f in fields):
        return ", ".join(got[f][1] for f in fields), None
    if init is not None and init.startswith(("{", "(")):
        close = "{}" if init.startswith("{") else "()"
        inner = init[1:_balanced(init, 0, close) - 1]
        grid = _from_braces(api, inner)
        for f, (_, v) in got.items():
            grid = v if len(fields) == 1 else grid
        return grid, None
    if init is not None and (call := re.match(r"([A-Za-z_][\w:]*)\s*(?:<[^;]*>)?\s*\(", init)):
        return "", f"the launch config {e} comes from {call.group(1)}(): built in another function"
    if e in where.params:
        return "", f"the launch config {e} is a parameter of {fn}: its callers fill it"
    return "", f"the launch config {e} is not filled in {fn}"


def _grid_unfollowed(grid: str, leaves: set[str], where: _Scope) -> str | None:
    """Why a grid cannot be followed: it is one name (`grid`, `num_blocks`, `dim3(blocks)`) that nothing in the
    function sets -- a parameter its callers choose, or a global, member or constant set elsewhere. A grid written
    from several names, or from an object's fields, says what it is built from and is followed as far as that."""
    g = re.sub(r"^\(?\s*(?:dim3\s*[({])?\s*(.*?)\s*[)}]?\s*\)?$", r"\1", grid.strip())
    if not re.fullmatch(r"[A-Za-z_]\w*", g) or g not in leaves:
        return None
    fn = f"{where.function}()" if where.function else "this file's top level"
    if g in where.params:
        return f"the grid is a parameter of {fn}: its callers choose it"
    return f"{g} is not set in {fn}: a global, a member or a constant set elsewhere"


def _cpp_sites(path: Path, rel: str, macros: dict | None = None, launching: dict | None = None,
               invoked: set | None = None) -> list[Site]:
    """A C++ file's launch sites. `macros`: the tree's function-like macros by name (this file's when not given);
    `launching`: those whose body launches, with the launches; `invoked`: the launching macros some file invokes."""
    code = _strip(path.read_text(errors="replace"))
    own = macros_of(code, rel)
    if macros is None:
        macros = {m.name: m for m in reversed(own)}
        launching = launching_macros(macros)
        invoked = {n for n, m in launching.items()
                   if any(not m.span[0] <= x.start() < m.span[1] for x in re.finditer(rf"\b{re.escape(n)}\b", code))}
    spans = [d.span for d in own]
    blocks = _blocks(code)
    out = []

    def add(pos, api, kernel, grid, config, via=""):
        where = _scope(code, pos, blocks)
        text = expand(code[where.start:pos], macros, 2)
        why = None
        if grid is None:
            grid, why = _config_grid(api, config, text, where)
        names, leaves = follow(text, _rhs(grid))
        why = why or _grid_unfollowed(grid, leaves, where)
        out.append(Site(rel, code.count("\n", 0, pos) + 1, where.function, api, kernel.strip(), grid.strip(),
                        names, [], why, via))

    for pos, api, kernel, grid, config in _launches(code):
        inside = next((d for d in own if d.span[0] <= pos < d.span[1]), None)
        if inside is None:
            add(pos, api, kernel, grid, config)
        elif inside.name not in (invoked or set()) and (macros[inside.name].file, macros[inside.name].span) == \
                (inside.file, inside.span):
            out.append(Site(rel, code.count("\n", 0, pos) + 1, "", api, kernel.strip(), (grid or "").strip(), set(),
                            [], f"inside the macro {inside.name}, which no file here invokes", ""))
    done = [(a, a + 1) for a, *_ in _launches(code)]  # a launch written out in a macro's arguments is its own site
    for a, b, m, args in _invocations(code, macros):
        if any(s[0] <= a < s[1] for s in spans) or any(x <= a < y or a <= x < b for x, y in done):
            continue                                   # inside a macro's body, or inside one expanded already
        body = expand(_substitute(m, args), macros, 3)
        found = {}                                     # one site per grid: a switch's cases launch one kernel's
        for _, api, kernel, grid, config in _launches(body):             # instances (kernel<2>, kernel<4>, ...)
            found.setdefault((api, (grid or "").strip(), config), (api, kernel, grid, config))
        if found:
            done.append((a, b))
        for api, kernel, grid, config in found.values():
            add(a, api, kernel, grid, config, via=m.name)
    return sorted(out, key=lambda s: s.line)


def launching_macros(macros: dict) -> dict:
    """The macros whose body, other macros expanded, holds a launch form."""
    return {n: m for n, m in macros.items() if _launches(expand(m.body, {k: v for k, v in macros.items() if k != n}, 3))}


# ------------------------------------------------------------------ the tree
def scan(root) -> tuple[list[Site], list[str]]:
    """(every launch site the grep finds under `root` -- a folder or one file --, the Python files it could not
    parse). Two passes: the tree's @triton.jit functions and C++ macros first, then each file's sites."""
    root = Path(root)
    if not root.exists():
        raise SitesError(f"no source tree at {root}")
    files = [root] if root.is_file() else sorted(
        p for p in root.rglob("*") if p.is_file() and not (set(p.relative_to(root).parts[:-1]) & SKIP_DIRS))
    rel = {p: (p.name if root.is_file() else p.relative_to(root).as_posix()) for p in files}
    trees = {p: _parse(p) for p in files if p.suffix in PY_SUFFIXES}
    infos = {p: _read_py(t) for p, t in trees.items() if t is not None}
    jit = set().union(*(i.jit for i in infos.values()))
    tuned = set().union(*(i.tuned for i in infos.values()))
    codes = {p: _strip(p.read_text(errors="replace")) for p in files if p.suffix in CPP_SUFFIXES}
    defined = {p: macros_of(c, rel[p]) for p, c in codes.items()}
    macros: dict = {}
    for ms in defined.values():
        for m in ms:
            macros.setdefault(m.name, m)                # the first definition read (an #if's first branch)
    launching = launching_macros(macros)
    invoked = set()                                    # named outside its own definition: invoked, or passed
    for n, m in launching.items():
        for p, c in codes.items():
            if any(not (m.file == rel[p] and m.span[0] <= x.start() < m.span[1])
                   for x in re.finditer(rf"\b{re.escape(n)}\b", c)):
                invoked.add(n)
                break
    out, unparsed = [], []
    for p in files:
        if p.suffix in PY_SUFFIXES:
            found = _python_sites(p, rel[p], trees[p], jit, tuned, infos.get(p))
            if found is None:
                unparsed.append(rel[p])
            else:
                out += found
        elif p.suffix in CPP_SUFFIXES:
            out += _cpp_sites(p, rel[p], macros, launching, invoked)
    return out, unparsed


def sites(root) -> list[Site]:
    return scan(root)[0]


def grep(root, dimension: str) -> list[tuple[Site, bool]]:
    """Every launch site under `root`, and whether its grid derives from `dimension` (e.g. 'head')."""
    mentions(dimension, ())                            # a bad dimension is refused before the walk
    return [(s, s.mentions(dimension)) for s in sites(root)]


def to_json(root, dimension: str, scanned: tuple | None = None) -> str:
    """Every site as `--grep ... --json FILE` writes it: file, line, function, api, kernel, grid, from_dimension,
    unfollowed (the reason, or null). `scanned`: scan(root)'s answer, when it is at hand."""
    mentions(dimension, ())
    found, unparsed = scanned or scan(root)
    return json.dumps({"dimension": dimension, "sites": [s.to_dict(dimension) for s in found],
                       "unparsed_python": unparsed, "apis": list(GREP_APIS), "cannot_see": list(BLIND)}, indent=1)


def report(root, dimension: str, only_hits: bool = False, scanned: tuple | None = None) -> str:
    """Step 8 as printed: every launch site (`only_hits`: those whose grid is built from `dimension`), each on
    lines of at most width.WIDTH characters, then what a static grep cannot see."""
    mentions(dimension, ())
    found, unparsed = scanned or scan(root)
    rows = [(s, s.mentions(dimension)) for s in found]
    hit = [s for s, h in rows if h]
    lost = [s for s in found if s.unfollowed]
    try:                                  # the course's own tree by its name in the checkout, not the machine's path
        shown = Path(root).resolve().relative_to(paths.ROOT.resolve()).as_posix() or "."
    except ValueError:
        shown = str(root)
    out = [width.fit(f"{len(rows)} launch sites under {shown}; {len(hit)} with a grid built from '{dimension}'"
                     + (f"; {len(lost)} whose grid the grep could not follow (marked ?)" if lost else "") + ":",
                     hang=2)]
    for s, h in rows:
        if only_hits and not h:
            continue
        where = f"{s.file}:{s.line}" + (f" {s.function}()" if s.function else "")
        mark = "*" if h else "?" if s.unfollowed else " "
        kernel = f" {s.kernel if len(s.kernel) <= 40 else s.kernel[:39] + '…'}" if s.kernel else ""
        grid = (s.grid if len(s.grid) <= 120 else s.grid[:119] + "…") or "?"
        out.append(width.fit(f"  {mark} {where}  {s.api}{kernel}  grid = {grid}", hang=6))
        for note in s.flags + ([f"unfollowed: {s.unfollowed}"] if s.unfollowed else []):
            out.append(width.fit(f"      {note}", hang=8))
    if unparsed:
        out.append(width.fit(f"{len(unparsed)} Python file(s) the parser could not read, not searched: "
                             f"{', '.join(unparsed[:5])}", hang=2))
    out.append("what a static grep cannot see:")
    out += [width.fit(f"  - {b}", hang=4) for b in BLIND]
    return "\n".join(out)
