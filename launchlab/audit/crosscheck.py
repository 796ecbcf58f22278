"""The CUPTI path checked against the course's own decode step: every launch the course logged (site, kernel,
grid, block) must be a kernel record of the same grid and block, in the same order, step by step.

cuBLAS's GEMVs are the exception the check names: the course logs one "cublas:gemmEx" call where cuBLAS makes one
to three kernels (an nvjet GEMM, a split-K reduce), so the check matches the course's own kernels in order and
counts what cuBLAS launched between them apart.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from launchlab.audit.launches import AuditError


@dataclass
class Agreement:
    steps: int
    course_launches: int             # the course's own kernels, in all steps (cuBLAS calls apart)
    matched: int                     # of them, records of the same name, grid and block in the same order
    cublas_calls: int
    cublas_kernels: int              # the records cuBLAS made for those calls
    mismatches: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return not self.mismatches and self.matched == self.course_launches


def _base(expr: str) -> str:
    """A kernel expression's identifier: "rms_norm_f32" of "rms_norm:rms_norm_f32", "kda_walk" of "kda_walk<0,
    false>"."""
    return expr.split(":", 1)[-1].split("<", 1)[0].strip()


LIBRARY = ("nvjet", "cublas", "gemv", "cutlass", "xmma")     # cuBLAS's kernels, as CUPTI names them


def _library(name: str) -> bool:
    n = name.lower()
    return any(k in n for k in LIBRARY)


def _dims(v) -> tuple[int, int, int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return tuple(v) + (1,) * (3 - len(v))


def against_log(doc: dict) -> Agreement:
    """Check a CUPTI record that carries the course's launch log (tools/audit_record.py writes both)."""
    log, recs, steps = doc.get("course_log"), doc.get("records"), doc.get("steps")
    if not isinstance(log, list) or not isinstance(recs, list) or not isinstance(steps, int) or len(log) != steps:
        raise AuditError("the record carries no course launch log of its steps to check against")
    ordered = sorted(recs, key=lambda r: r["correlation_id"])
    i, matched, course, calls, cub, bad = 0, 0, 0, 0, 0, []
    for s, launches in enumerate(log):
        for site, kernel, grid, block, _smem in launches:
            if kernel.startswith("cublas:"):
                calls += 1
                continue
            course += 1
            base = _base(kernel)
            skipped = 0
            while i < len(ordered) and base not in ordered[i]["name"]:
                if not _library(ordered[i]["name"]):
                    bad.append(f"step {s} {site}: before {kernel}, a record of {ordered[i]['name'][:60]} that is "
                               f"neither the course's next kernel nor cuBLAS's")
                skipped += 1                      # cuBLAS's kernels sit between the course's own
                i += 1
            cub += skipped
            if i == len(ordered):
                bad.append(f"step {s} {site}: {kernel} has no record left")
                break
            r = ordered[i]
            i += 1
            got_grid = (r["grid_x"], r["grid_y"], r["grid_z"])
            got_block = r["block_x"] * r["block_y"] * r["block_z"]
            if got_grid != _dims(grid) or got_block != block:
                bad.append(f"step {s} {site}: the course launched {kernel} at grid {list(grid)} x {block}, CUPTI "
                           f"recorded {list(got_grid)} x {got_block}")
            else:
                matched += 1
    rest = ordered[i:]
    bad += [f"after the last step: a record of {r['name'][:60]} the course did not launch" for r in rest
            if not _library(r["name"])]
    cub += len(rest)
    return Agreement(steps, course, matched, calls, cub, bad)


@dataclass
class ProfileAgreement:
    """CUPTI's records of the course's kernels against the course's step profile (its rows: kernel, grid, block,
    calls per token), shape by shape."""
    steps: int
    shapes: int                      # the profile's own-kernel shapes (kernel, grid, block)
    launches_per_step: int           # the profile's own launches per token
    matched_per_step: int            # of them, with as many records of that kernel, grid and block in every step
    mismatches: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return not self.mismatches and self.matched_per_step == self.launches_per_step


def against_profile(doc: dict, profile: dict) -> ProfileAgreement:
    """Check a CUPTI record of the course's step (its `course_log` marks where each step's records start) against a
    step profile (launchlab.sections.s06_one_binary.stepprofile's, as recorded: `rows` with kernel, grid, block,
    calls) of the same preset and depth."""
    rows, recs, steps = profile.get("rows"), doc.get("records"), doc.get("steps")
    log = doc.get("course_log")
    if not isinstance(rows, list) or not isinstance(recs, list) or not isinstance(log, list) or steps != len(log):
        raise AuditError("a CUPTI record with its course launch log and a step profile with rows are needed")
    if doc.get("preset") != profile.get("preset") or doc.get("ctx") != profile.get("ctx"):
        raise AuditError(f"the record is of {doc.get('preset')} at ctx {doc.get('ctx')}, the profile of "
                         f"{profile.get('preset')} at ctx {profile.get('ctx')}: not the same step")
    want: dict[tuple, int] = {}
    for r in rows:
        if r["kernel"].startswith("cublas:"):
            continue
        b = r["block"] if isinstance(r["block"], int) else _dims(r["block"])[0]
        k = (_base(r["kernel"]), _dims(r["grid"]), int(b))
        want[k] = want.get(k, 0) + int(r["calls"])
    ordered = sorted(recs, key=lambda r: r["correlation_id"])
    bounds, acc = [], 0                      # each step's own records: as many as the log's own launches
    own = [r for r in ordered if not _library(r["name"])]
    for s in range(steps):
        n = sum(1 for x in log[s] if not x[1].startswith("cublas:"))
        bounds.append((acc, acc + n))
        acc += n
    bad, matched = [], None
    for s, (lo, hi) in enumerate(bounds):
        got: dict[tuple, int] = {}
        for r in own[lo:hi]:
            key = (r["name"], (r["grid_x"], r["grid_y"], r["grid_z"]), r["block_x"] * r["block_y"] * r["block_z"])
            got[key] = got.get(key, 0) + 1
        ok = 0
        for (base, grid, block), n in want.items():
            have = sum(c for (name, g, b), c in got.items() if g == grid and b == block
                       and _base_of_record(name) == base)
            if have == n:
                ok += n
            else:
                bad.append(f"step {s}: the profile has {n} x {base} at grid {list(grid)} x {block}, CUPTI "
                           f"recorded {have}")
        extra = sum(got.values()) - sum(want.values())
        if extra:
            bad.append(f"step {s}: CUPTI recorded {extra:+d} course kernels beyond the profile's")
        matched = ok if matched is None else min(matched, ok)
    return ProfileAgreement(steps, len(want), sum(want.values()), matched or 0, bad)


def _base_of_record(name: str) -> str:
    """A CUPTI record's kernel identifier: its mangled name's (_Z8kda_walkILi0E... -> kda_walk) or its plain name."""
    if name.startswith("_Z"):
        i, n = 2, ""
        if name[i] == "N":
            i += 1
        while i < len(name) and name[i].isdigit():
            n += name[i]
            i += 1
        return name[i:i + int(n)] if n else name
    return name.split("(", 1)[0].split("<", 1)[0].strip()
