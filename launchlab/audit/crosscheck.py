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
