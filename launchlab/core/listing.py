"""One kernel variant's CUDA source on the page: the kernel with the helpers it uses (and nothing else),
its registers and shared memory, and its occupancy at a block size (`show`, what notebooks print); two variants
side by side as the lines where they differ (`diff`).

On the page a listing shows what the lesson is about, in at most MAX_SHOWN lines: the lines that set the launch
geometry (`blockIdx`, `blockDim`, `gridDim`, `threadIdx`, `__launch_bounds__`) or match the caller's `focus`,
each with its neighbours and the kernel's signature, the rest folded into `// ... N lines` markers; the whole
listing is one click away (an HTML `<details>`), and `.code` holds it."""
from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from launchlab.core import occupancy
from launchlab.core.compiler import Resources
from launchlab.core.loader import compiled_resources
from launchlab.core.sources import FAMILIES, KERNEL_DIR, KernelError, files
from launchlab.core.width import WIDTH


MAX_SHOWN = 40                 # lines a listing shows before its fold (issue 41: longest_listing_lines <= 40)
GEOMETRY = r"\b(blockIdx|blockDim|gridDim|threadIdx|__launch_bounds__)\b"


def excerpt(code: str, focus: str = GEOMETRY, context: int = 1, limit: int = MAX_SHOWN) -> list[str]:
    """The lines of `code` that match `focus`, each with `context` neighbours, and every `__global__` signature
    (to its opening brace), in order; each run of left-out lines becomes one `// ... N lines` marker. A listing
    puts its kernel last, so when the matches do not fit in `limit` lines (markers included) the context narrows
    first, then the earliest matches go (the helpers' before the kernel's). A code that fits is whole."""
    lines = code.split("\n")
    if len(lines) <= limit:
        return lines
    pat = re.compile(focus)
    hits = [i for i, ln in enumerate(lines) if pat.search(ln) and not ln.lstrip().startswith("//")]
    heads = set()
    for i, ln in enumerate(lines):
        if "__global__" in ln and not ln.lstrip().startswith("//"):
            j = i
            while j < len(lines) - 1 and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
                j += 1
            end, depth = j, 0                     # a short kernel (a wrapper of a few lines) is shown whole
            for k in range(j, min(len(lines), j + 8)):
                depth += lines[k].count("{") - lines[k].count("}")
                if depth <= 0:
                    end = k
                    break
            heads.update(range(i, end + 1))
    out: list[str] = []
    for ctx in range(context, -1, -1):
        for drop in range(len(hits) + 1):
            chosen = set(heads)
            for i in hits[drop:]:
                chosen.update(range(max(0, i - ctx), min(len(lines), i + ctx + 1)))
            out, last = [], -1
            for i in sorted(chosen):
                if i > last + 1:
                    out.append(_fold(lines[last + 1:i]))
                out.append(lines[i])
                last = i
            if last < len(lines) - 1:
                out.append(_fold(lines[last + 1:]))
            if len(out) <= limit:
                return out
    return out[:limit - 1] + [_fold(out[limit - 1:])]


def _fold(left_out: list[str]) -> str:
    """One marker for a run of left-out lines, indented as the first of them that has code."""
    first = next((ln for ln in left_out if ln.strip()), "")
    n = len(left_out)
    return f"{first[:len(first) - len(first.lstrip())]}// ... {n} line{'s' * (n != 1)}"


def _highlight(text: str, lexer: str) -> str:
    """`text` as an HTML <pre> with inline colours (pygments: no stylesheet to ship, so it reads the same in
    JupyterLab, a static page and the course's website)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    return highlight(text, get_lexer_by_name(lexer), HtmlFormatter(noclasses=True, nowrap=False, style="default"))


def _folded(summary: str, body_html: str) -> str:
    return f"<details><summary>{html.escape(summary)}</summary>\n{body_html}</details>"


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
    focus: str = GEOMETRY      # what the page shows of a listing longer than MAX_SHOWN lines
    parts: dict = field(default_factory=dict)     # name -> the text of each piece of the listing that defines it

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

    @property
    def shown(self) -> list[str]:
        """The lines the page shows: the whole code when it fits in MAX_SHOWN, else its excerpt; a line past
        the page's width soft-wrapped (`soft_wrap`)."""
        for limit in range(MAX_SHOWN, 0, -1):             # wrapped lines count against the limit too
            parts = [part for ln in excerpt(self.code, self.focus, limit=limit) for part in soft_wrap(ln)]
            if len(parts) <= MAX_SHOWN:
                return parts
        return parts[:MAX_SHOWN]

    @property
    def lines(self) -> int:
        return self.code.count("\n") + 1

    def _fold_note(self) -> str:
        return f"the whole listing: {self.lines} lines"

    def __str__(self) -> str:
        """The whole listing (what `print` gives)."""
        return "\n".join(self.header() + ["", self.code])

    @property
    def folded(self) -> bool:
        return len(self.shown) < self.lines or excerpt(self.code, self.focus) != self.code.split("\n")

    def __repr__(self) -> str:
        """What a console shows: the header and the excerpt (print() the object for all of it)."""
        tail = [f"({self._fold_note()}; print() it for all of them)"] if self.folded else []
        return "\n".join(self.header() + [""] + self.shown + tail)

    def _repr_html_(self) -> str:
        head = "<br>".join(f"<code>{html.escape(h)}</code>" if i == 0 else html.escape(h)
                           for i, h in enumerate(self.header()))
        out = f"<p>{head}</p>\n" + _highlight("\n".join(self.shown), "cuda")
        if self.folded:
            out += _folded(self._fold_note() + " (click to open)", _highlight(self.code, "cuda"))
        return out


def show(family: str, expr: str, block: int | None = None, helpers: bool = False,
         focus: str = GEOMETRY) -> Source:
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
        code = (f"// also uses {', '.join(header_helpers)} from the shared headers\n"
                f"// (listing.show({family!r}, {expr!r}, helpers=True) prints them)\n" + code)
    src = _source(family, expr, params, args, code, block, focus)
    src.parts = {nm: c.text for c in parts for nm in c.names}
    return src


def _source(family, expr, params, args, code, block, focus=GEOMETRY) -> Source:
    r, origin = compiled_resources(family, expr)
    occ = ""
    if block is not None:
        occ = f"at block {block}: " + occupancy.occupancy(block, r.registers, r.smem_static).describe()
    return Source(family, expr, dict(zip(params, args)), code, r, origin, occ, focus)


# ---------------------------------------------------------------- two variants, as the lines that differ
@dataclass
class Diff:
    """Two listings as a unified diff of their code (what one changes against the other) -- or, with
    `between=(name_a, name_b)`, of one named piece of each (a helper that one variant replaces with another) --
    both headers above it and both whole listings one click away."""
    a: Source
    b: Source
    between: tuple[str, str] | None = None
    context: int = 2

    def _texts(self) -> tuple[str, str]:
        if self.between is None:
            return self.a.code, self.b.code
        for s, nm in zip((self.a, self.b), self.between):
            if nm not in s.parts:
                raise KernelError(f"{s.expr}'s listing defines no {nm!r}; it defines: {', '.join(sorted(s.parts))}")
        return self.a.parts[self.between[0]], self.b.parts[self.between[1]]

    @property
    def lines(self) -> list[str]:
        ta, tb = self._texts()
        names = self.between or (self.a.expr, self.b.expr)
        out = []
        for ln in difflib.unified_diff(ta.split("\n"), tb.split("\n"), fromfile=f"{self.a.expr}: {names[0]}",
                                       tofile=f"{self.b.expr}: {names[1]}", n=self.context, lineterm=""):
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", ln)
            if m:                             # "@@ -1,21 +1,17 @@" in words: its numbers read as one quantity
                (s1, n1), (s2, n2) = ((int(a), int(b or 1)) for a, b in ((m[1], m[2]), (m[3], m[4])))
                ln = f"@@ {names[0]} lines {s1}-{s1 + n1 - 1}, {names[1]} lines {s2}-{s2 + n2 - 1} @@"
            out.append(ln)
        return out

    @property
    def shown(self) -> list[str]:
        d = [part for ln in self.lines for part in soft_wrap(ln)]
        if len(d) <= MAX_SHOWN:
            return d
        return d[:MAX_SHOWN - 1] + [f"@@ ... {len(d) - MAX_SHOWN + 1} more diff lines: the whole listings are below"]

    def __repr__(self) -> str:
        return "\n".join(self.a.header() + self.b.header() + [""] + self.shown)

    def _repr_html_(self) -> str:
        head = "".join("<p>" + "<br>".join(f"{mark} <code>{html.escape(h)}</code>" if i == 0 else html.escape(h)
                                           for i, h in enumerate(s.header())) + "</p>\n"
                       for mark, s in (("&minus;", self.a), ("+", self.b)))
        out = head + _highlight("\n".join(self.shown), "diff")
        for s in (self.a, self.b):
            out += _folded(f"{s.expr}: the whole listing, {s.lines} lines (click to open)",
                           _highlight(s.code, "cuda"))
        return out


def diff(family: str, a: str, b: str, block_a: int | None = None, block_b: int | None = None,
         between: tuple[str, str] | None = None) -> Diff:
    """Variants `a` and `b` of kernels/<family>.cu as the lines where their listings differ (with `between`,
    where the named piece of each differs)."""
    d = Diff(show(family, a, block_a), show(family, b, block_b), between)
    d._texts()                                   # an unknown piece is refused here, not when it is displayed
    return d


# ---------------------------------------------------------------- a whole source file, as the page shows it
def soft_wrap(line: str, width: int | None = None) -> list[str]:
    """One source line as the page shows it: past `width` it continues on the next line, under a `↪` marker (a
    soft wrap, as an editor's: the file itself is unchanged)."""
    width = width or WIDTH
    indent = " " * (len(line) - len(line.lstrip()) + 4) + "↪ "
    out = []
    while len(line) > width:
        cut = line.rfind(" ", len(indent), width)
        if cut <= len(indent):
            break
        out.append(line[:cut])
        line = indent + line[cut + 1:]
    return out + [line]


@dataclass
class File:
    """A source file of kernels/ whole, each line past the page's width soft-wrapped (`soft_wrap`)."""
    name: str
    text: str

    def shown(self) -> list[str]:
        return [part for ln in self.text.rstrip("\n").split("\n") for part in soft_wrap(ln)]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return "\n".join([f"kernels/{self.name}"] + self.shown())

    def _repr_html_(self) -> str:
        wrapped = len(self.shown()) > self.text.rstrip("\n").count("\n") + 1
        note = " (a line past 110 characters continues under ↪)" if wrapped else ""
        return (f"<p><code>kernels/{html.escape(self.name)}</code>{html.escape(note)}</p>\n"
                + _highlight("\n".join(self.shown()), "cuda"))


def file(name: str) -> File:
    """kernels/<name> (a .cu or .cuh the course compiles), whole, as the page shows it."""
    path = KERNEL_DIR / name
    if path.parent != KERNEL_DIR or not path.is_file() or path.suffix not in (".cu", ".cuh"):
        raise KernelError(f"{name!r} is not a source file of kernels/")
    return File(name, path.read_text())
