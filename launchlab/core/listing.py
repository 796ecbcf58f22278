"""One kernel variant's CUDA source on the page: the kernel with the helpers it uses (and nothing else),
its registers and shared memory, and its occupancy at a block size (`show`, what notebooks print)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from launchlab.core import occupancy
from launchlab.core.compiler import Resources
from launchlab.core.loader import compiled_resources
from launchlab.core.sources import FAMILIES, KernelError, files


# ---------------------------------------------------------------- the source of one variant, on the page
@dataclass
class _Chunk:
    file: str
    order: int
    text: str                  # with the comment lines directly above it
    names: tuple[str, ...]     # what it defines
    is_global: bool
    has_body: bool


_IDENT = re.compile(r"[A-Za-z_]\w*")


def _chunks(path: Path, file_index: int) -> list[_Chunk]:
    """Split a CUDA source into its top-level pieces (preprocessor lines, declarations, definitions), each
    with the comment block directly above it and the names it defines."""
    src = path.read_text()
    out: list[_Chunk] = []
    i, n, depth, start = 0, len(src), 0, 0
    comment_start = None

    def emit(end: int):
        nonlocal start, comment_start
        body = src[start:end].strip("\n")
        head = src[comment_start:start] if comment_start is not None else ""
        text = (head + body).strip("\n")
        code = re.sub(r"//[^\n]*", "", body)
        names: list[str] = []
        if code.lstrip().startswith("#define"):
            names = [code.split()[1].split("(")[0]]
        elif code.lstrip().startswith("#"):
            names = []
        else:
            m = re.search(r"\bstruct\s+(\w+)", code.split("{")[0])
            if m:
                names = [m.group(1)]
            else:
                header = re.sub(r"__launch_bounds__\s*\([^)]*\)", "", code.split("{")[0])
                m = re.search(r"(\w+)\s*(?:<[^()]*>)?\s*\(", header)
                if m:
                    names = [m.group(1)]
        out.append(_Chunk(path.name, file_index * 100000 + len(out), text, tuple(names),
                          "__global__" in code, "{" in code))
        start, comment_start = end, None

    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j + 1
            if depth == 0 and src[start:i].strip() == "":
                if comment_start is None:
                    comment_start = i
                start = j
            i = j
            continue
        c = src[i]
        if depth == 0 and c == "#" and src[start:i].strip() == "":
            j = src.find("\n", i)
            j = n if j < 0 else j
            start = i
            emit(j)
            i = j
            continue
        if depth == 0 and c == "\n" and src[start:i].strip() == "" and comment_start is not None:
            if src[comment_start:i].count("\n\n") or src.startswith("\n", i + 1):
                comment_start = None       # a blank line ends a comment block that belongs to nothing below
            start = i + 1
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                j = i + 1
                if src[j:].lstrip().startswith(";"):
                    j = src.index(";", j) + 1
                emit(j)
                i = j
                continue
        elif c == ";" and depth == 0:
            emit(i + 1)
        i += 1
    return out


@dataclass
class Source:
    """The CUDA source of exactly one launched variant: the kernel, the helpers and macros it uses from its
    family's files, which template arguments this variant binds, and what the compile gave it."""
    family: str
    expr: str
    bindings: dict
    code: str
    resources: Resources
    origin: str                # where the resources come from: the NVRTC compile, or the loaded kernel
    occupancy_line: str = ""

    def header(self) -> list[str]:
        r = self.resources
        bind = ", ".join(f"{k} = {v}" for k, v in self.bindings.items())
        spill = f", {r.spill_stores + r.spill_loads} B spilled" if r.spill_stores >= 0 else ""
        lines = [f"kernels/{self.family}.cu -- {self.expr}" + (f"  ({bind})" if bind else ""),
                 f"{self.origin}: {r.registers} registers/thread, {r.smem_static} B static shared memory, "
                 f"{r.stack_frame} B stack{spill}"]
        if self.occupancy_line:
            lines.append(self.occupancy_line)
        return lines

    def __str__(self) -> str:
        return "\n".join(self.header() + ["", self.code])

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        head = "  \n".join(f"`{h}`" if i == 0 else h for i, h in enumerate(self.header()))
        return f"{head}\n\n```cuda\n{self.code}\n```\n"


def show(family: str, expr: str, block: int | None = None, helpers: bool = False) -> Source:
    """The CUDA source of the variant `expr` of kernels/<family>.cu as a notebook displays it: the kernel (with
    helpers=True, also the helpers and macros it uses, from the .cu file and its headers; without, their names
    in a comment above it), the template arguments this variant binds, its registers and shared memory from the
    NVRTC compile, and (with `block`) its occupancy."""
    if expr not in FAMILIES.get(family, ()):
        raise KernelError(f"{expr!r} is not a variant the course launches from kernels/{family}.cu; "
                          f"known: {', '.join(FAMILIES.get(family, ())) or 'none'}")
    name = expr.split("<")[0].strip()
    args = [a.strip() for a in expr[len(name):].strip("<> ").split(",")] if "<" in expr else []
    chunks = [c for i, p in enumerate(files(family)) for c in _chunks(p, i)]
    body = next((c for c in chunks if c.is_global and c.has_body and name in c.names), None)
    if body is None:
        raise KernelError(f"no __global__ {name} with a body in kernels/{family}.cu")
    params = []
    m = re.search(r"template\s*<([^>]*)>", re.sub(r"//[^\n]*", "", body.text))
    if m:
        params = [p.split()[-1] for p in m.group(1).split(",") if p.strip()]
    defs = {}
    for c in chunks:
        if c is body or (c.is_global and not c.has_body):
            continue
        for nm in c.names:
            defs.setdefault(nm, []).append(c)
    used, todo = [], [body]
    while todo:
        c = todo.pop()
        for ident in set(_IDENT.findall(re.sub(r"//[^\n]*", "", c.text))):
            for d in defs.get(ident, []):
                if d not in used:
                    used.append(d)
                    todo.append(d)
    own = files(family)[0].name
    header_helpers = sorted({nm for c in used if c.file != own for nm in c.names})
    if not helpers:
        used = [c for c in used if c.file == own]          # the kernel's own file: its body and its helpers
    parts = sorted(used, key=lambda c: c.order) + [body]
    code = ""
    for prev, part in zip([None] + parts, parts):
        one_liner = lambda c: c is not None and c.text.startswith("#") and "\n" not in c.text   # noqa: E731
        code += ("\n" if one_liner(prev) and one_liner(part) else "\n\n" if prev is not None else "") + part.text
    if not helpers and header_helpers:
        code = (f"// also uses {', '.join(header_helpers)} from the shared headers "
                f"(listing.show({family!r}, {expr!r}, helpers=True) prints them)\n" + code)
    return _source(family, expr, params, args, code, block)


def _source(family, expr, params, args, code, block) -> Source:
    r, origin = compiled_resources(family, expr)
    occ = ""
    if block is not None:
        occ = f"at block {block}: " + occupancy.occupancy(block, r.registers, r.smem_static).describe()
    return Source(family, expr, dict(zip(params, args)), code, r, origin, occ)
