"""§5: after sharding a dimension, audit every launch whose grid is derived from it.

`sites()` finds every kernel launch in the package (calls of `.launch(grid, block, ...)`) and, for each, the
names its grid expression is built from -- followed back through the assignments of the enclosing function
and the fields of the Plan objects that carry geometry. `grep(dimension)` then reports every site, marking
those whose grid depends on the dimension and those that do not: grep for the dimension, not for the kernel.
The kernels' own side (`blockIdx.y` read as a head index, etc.) is listed by `kernel_axes()`.
"""
from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from launchlab.core.width import fit_all
from launchlab.audit.sites import closure as _closure
from launchlab.audit.sites import names_of as _names
from launchlab.core import hardware, occupancy, paths

PACKAGE = paths.PACKAGE
KERNELS = PACKAGE.parent / "kernels"


@dataclass
class Site:
    file: str
    line: int
    function: str
    grid: str                  # the grid expression as written
    names: set = field(default_factory=set)    # every name the grid derives from (transitively)
    site: str = ""             # the label a launch helper is given (the decode step's "L{i}.kda.prep"), if any

    @property
    def role(self) -> str:
        """The site label without its layer ("L{i}.kda.prep" -> "kda.prep"), as the step's profile names it."""
        return self.site.split(".", 1)[1] if self.site.startswith("L{") and "." in self.site else self.site

    @property
    def harness(self) -> bool:
        """A launch that measures or checks rather than computes the course's work: anything outside the
        kernels' host code (launchlab/kernels/: the instruments in core/, the lessons' measurement harness, the
        self-test checks), and the kernels' own self-checks (functions named check*)."""
        return not self.file.startswith("kernels/") or self.function.startswith("check")

    def mentions(self, dimension: str) -> bool:
        pat = re.compile(rf"(^|_){re.escape(dimension)}($|_|s\b)", re.I)
        return any(pat.search(n) for n in self.names) or bool(pat.search(self.grid))


def _plan_fields(tree: ast.Module) -> dict[str, set[str]]:
    """Properties of classes in a module (e.g. Plan.grid) and the names they are computed from."""
    out: dict[str, set[str]] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            out[fn.name] = _names(fn) - {"self", fn.name}
    return out


def _params(fn) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]


def _arg_for(call: ast.Call, fn, param: str):
    """The expression a call passes for `param` of `fn` (methods called as self.f(...) skip self)."""
    for kw in call.keywords:
        if kw.arg == param:
            return kw.value
    params = _params(fn)
    if params and params[0] == "self" and isinstance(call.func, ast.Attribute):
        params = params[1:]
    i = params.index(param) if param in params else -1
    return call.args[i] if 0 <= i < len(call.args) else None


def _label(node) -> str:
    """A launch helper's site argument as written: "embed", or f"L{i}.kda.prep" -> "L{i}.kda.prep"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                       for v in node.values)
    return ""


# Modules whose launches are refused on purpose (the reliability sweep's bad inputs: a grid of 0, 240 KB of
# shared memory), or time the host's side of a launch with one fixed 1-block kernel (`bench host`): they compute
# nothing of the model, so there is no geometry to audit in them.
NOT_AUDITED = ("badinputs.py", "bench.py")


_found: dict[tuple, list[Site]] = {}         # the sites of a package as its files stood (path, mtime, size)


def sites(package: Path = PACKAGE) -> list[Site]:
    """Every launch site. A launch inside a helper whose grid is one of the helper's parameters (the decode
    step's `_k(site, layer, expr, grid, ...)`) is listed at each of the helper's call sites instead, with the
    grid the caller passes, followed through as many helpers as it takes.

    The walk is a function of the files alone, so it is made once per state of them: a file edited, added or
    removed (its mtime or size) walks the package again. Each call gets its own copies of the sites."""
    paths = [p for p in sorted(package.rglob("*.py")) if p.name not in NOT_AUDITED]
    key = (str(package),) + tuple((str(p), st.st_mtime_ns, st.st_size) for p in paths for st in [p.stat()])
    if key not in _found:
        if len(_found) >= 8:
            _found.clear()
        _found[key] = _walk(package, paths)
    return [replace(s, names=set(s.names)) for s in _found[key]]


def _walk(package: Path, paths: list[Path]) -> list[Site]:
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        fields_ = _plan_fields(tree)
        funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        calls = [(fn, c) for fn in funcs for c in ast.walk(fn) if isinstance(c, ast.Call)]

        def called(name):
            for fn, c in calls:
                f = c.func
                if (isinstance(f, ast.Attribute) and f.attr == name) or (isinstance(f, ast.Name) and f.id == name):
                    yield fn, c

        def resolve(fn, expr, lineno, depth=0, label=""):
            names = _closure(fn, _names(expr))
            params = [p for p in _params(fn) if p != "self" and p in names]
            helper = params and not (names - set(_params(fn)))      # the grid is built from parameters alone
            if helper and depth < 4 and any(True for _ in called(fn.name)):
                for caller, c in called(fn.name):
                    site = _arg_for(c, fn, "site") if "site" in _params(fn) else None
                    for prm in params:
                        arg = _arg_for(c, fn, prm)
                        if arg is not None:
                            resolve(caller, arg, c.lineno, depth + 1, _label(site) or label)
                return
            for n in list(names):            # follow geometry properties such as p.grid
                names |= fields_.get(n, set())
            found.append(Site(path.relative_to(package).as_posix(), lineno, fn.name, ast.unparse(expr), names,
                              label))

        for fn in funcs:
            for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                f = call.func
                if not (isinstance(f, ast.Attribute) and f.attr == "launch" and len(call.args) >= 2):
                    continue
                if fn.name == "launch":          # the launcher itself, not a launch site
                    continue
                resolve(fn, call.args[0], call.lineno)
    return found


def grep(dimension: str, package: Path = PACKAGE) -> list[tuple[Site, bool]]:
    """Every launch site, with whether its grid is derived from `dimension` (e.g. 'head')."""
    return [(s, s.mentions(dimension)) for s in sites(package)]


def kernel_axes(kernels_dir: Path = KERNELS) -> list[tuple[str, int, str]]:
    """Lines in kernels/*.cu that read a grid coordinate (blockIdx/gridDim) into a named quantity."""
    out = []
    for path in sorted(kernels_dir.glob("*.cu")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\b(blockIdx|gridDim)\.[xyz]\b", line) and not line.strip().startswith("//"):
                out.append((path.name, i, line.strip()))
    return out


def report(dimension: str, harness: bool = False) -> str:
    """Every launch site of the course's own kernel code (launchlab/kernels/) and whether its grid derives from
    `dimension`; harness=True lists the instruments' and self-checks' launches too."""
    hits = grep(dimension)
    shown = [(s, hit) for s, hit in hits if harness or not s.harness]
    scope = "every site" if harness else "the course's kernel host code, every one listed"
    rows = [f"launch sites whose grid derives from '{dimension}' ({scope}):"]
    for s, hit in shown:
        # file and function locate a site; line numbers are left out so the report (a checked notebook
        # output) does not change whenever an unrelated line of a module moves. Site.line has them.
        rows.append(f"  {'GRID DEPENDS ON IT' if hit else 'independent       '}  {s.file} "
                    f"{s.function}()  grid = {s.grid}")
    if not harness:
        left = [(s, hit) for s, hit in hits if s.harness]
        rows.append(f"  (and {len(left)} launches of the instruments and self-checks, {sum(h for _, h in left)} of "
                    f"them from '{dimension}': audit.report({dimension!r}, harness=True) lists them)")
    return fit_all("\n".join(rows))


@dataclass
class StepRow:
    """One launch of the decode step whose grid the audit derives from a dimension, with what the step's
    profile measured for it (in the step, CUDA graph: weights cold, activations as the step leaves them)."""
    role: str
    grid: list[int]
    blocks: int
    sms_pct: float                 # blocks / SMs, at most 100
    us_per_call: float
    calls: int
    us_per_token: float
    over_cheapest: float           # us_per_call / the step's cheapest launch's (what one launch costs in the step)
    fill_pct: float | None = None  # wave fill: blocks / (resident blocks per SM x SMs), at most 100 (`wave_fill`)

    @property
    def starved(self) -> bool:
        """Under half the SMs have a block (the lab's first flag, step 2)."""
        return self.sms_pct < 50

    @property
    def half_empty(self) -> bool:
        """Its one wave fills under half the slots the SMs hold (wave fill < 50 %), whatever blocks / SMs says."""
        return self.fill_pct is not None and self.fill_pct < 50


def wave_fill(row, sms: int) -> tuple[float | None, int | None]:
    """(wave fill %, blocks one SM holds) of a profiled launch: blocks / (resident x SMs), at most 100 -- the lab's
    step 3 ranking (launchlab.audit.shapes.Shape.wave_fill), resident from the calculator on the row's registers
    and shared memory. None without them (a library kernel's row)."""
    if row.registers is None:
        return None, None
    blocks = 1
    for g in row.grid:
        blocks *= g
    resident = occupancy.occupancy(row.block, row.registers, row.smem or 0).blocks_per_sm
    return (None if resident == 0 else 100 * min(1.0, blocks / (resident * sms))), resident


def _step_rows_of(site: Site, rows: list, sites_in_file: int) -> list:
    """The profile rows a launch site accounts for. A decode-step site by its label's role; a kernel module's
    own launch (kernels/mla.py split(), kernels/kda_decode.py step()) by the module's kernel family, and within
    it by the function's name in the kernel's expression where the module has more than one launch site."""
    if site.file == "kernels/decode.py":
        return [r for r in rows if r.role == site.role]
    family = getattr(importlib.import_module("launchlab." + site.file[:-3].replace("/", ".")), "FAMILY", None)
    mine = [r for r in rows if r.kernel.split(":", 1)[0] == family]
    return mine if sites_in_file == 1 else [r for r in mine if site.function in r.kernel.split(":", 1)[1]]


def in_step(dimension: str, profile, sm_count: int | None = None) -> list[StepRow]:
    """The decode step's launches whose grid the audit derives from `dimension`, joined with the step's profile
    (stepprofile.Profile, live or recorded), most time per token first. The cheapest launch of the step is the
    reference for "one launch's worth of time" (the course's small elementwise kernels, ~1.4 µs). A site of
    the step's own code that the profile does not time is an error (the join is wrong, not the step)."""
    sms = sm_count or hardware.spec("H200").sm_count
    kernel_sites = [s for s in sites() if not s.harness]
    per_file = {f: sum(1 for s in kernel_sites if s.file == f) for f in {s.file for s in kernel_sites}}
    timed = [r for r in profile.rows if r.grid]                # cuBLAS's rows have no grid of the course's own
    cheapest = min(r.us_per_call for r in timed)
    picked: dict = {}
    for site in kernel_sites:
        if not site.mentions(dimension):
            continue
        got = _step_rows_of(site, timed, per_file[site.file])
        if not got and site.file == "kernels/decode.py":
            raise ValueError(f"the audit found the step's launch {site.site!r}, which the profile does not time")
        for r in got:
            picked[id(r)] = r
    out = []
    for r in picked.values():
        blocks = 1
        for g in r.grid:
            blocks *= g
        out.append(StepRow(r.role, list(r.grid), blocks, 100 * min(blocks, sms) / sms, r.us_per_call, r.calls,
                           r.us_per_token, r.us_per_call / cheapest, wave_fill(r, sms)[0]))
    return sorted(out, key=lambda r: -r.us_per_token)


def missed(rows: list[StepRow], profile, counts: dict[str, int]) -> list[tuple[str, int, str]]:
    """Launches of the step whose block count equals a sharded count (`counts`: {"KDA heads": 12, ...}) but
    which the audit did not derive from the dimension: (role, blocks, which count). Such a grid may come from
    an array's shape (rms_norm's rows = x.size // n) that no name in the source carries."""
    found = {r.role for r in rows}
    out = []
    for r in profile.rows:
        blocks = 1
        for g in r.grid:
            blocks *= g
        for what, n in counts.items():
            if r.grid and blocks == n and r.role not in found:
                out.append((r.role, blocks, what))
    return out


def in_step_table(rows: list[StepRow], step_us: float) -> str:
    out = [f"{'launch':<13} {'grid':>7} {'blocks':>6} {'SMs':>5} {'fill':>5} {'calls':>5} {'µs/call':>8} "
           f"{'x min':>6} {'µs/token':>9} {'of step':>7}  flag"]
    for r in rows:
        grid = " x ".join(str(g) for g in r.grid if g > 1) or "1"
        fill = "" if r.fill_pct is None else f"{r.fill_pct:>4.0f}%"
        flag = ("under half the SMs" if r.starved else "wave half empty" if r.half_empty else "")
        out.append(f"{r.role:<13} {grid:>7} {r.blocks:>6} {r.sms_pct:>4.0f}% {fill:>5} {r.calls:>5} "
                   f"{r.us_per_call:>8.2f} {r.over_cheapest:>6.1f} {r.us_per_token:>9.1f} "
                   f"{100 * r.us_per_token / step_us:>6.1f}%  {flag}")
    return "\n".join(out)


def headline(kda_data) -> dict:
    """§5's figures: what sharding heads did to main's grid and time (cold L2), and what the audit finds."""
    hits = [(s, hit) for s, hit in grep("head") if not s.harness]      # the course's own launch sites
    m1, m8 = (kda_data.point(tp, kda_data.V, "store", "walk") for tp in (1, 8))
    f1, f8 = (kda_data.point(tp, kda_data.bv_tiled, "rn", "walk") for tp in (1, 8))
    return {"kda_main_blocks_tp1": m1.blocks, "kda_main_blocks_tp8": m8.blocks,
            "kda_main_cold_us_tp1": m1.cold.median, "kda_main_cold_us_tp8": m8.cold.median,
            "kda_main_cold_tbs_tp1": m1.tbs_cold, "kda_main_cold_tbs_tp8": m8.tbs_cold,
            "kda_fix_cold_us_tp1": f1.cold.median, "kda_fix_cold_us_tp8": f8.cold.median,
            "audit_launch_sites": len(hits),
            "audit_sites_grid_from_head": sum(1 for _, hit in hits if hit)}
