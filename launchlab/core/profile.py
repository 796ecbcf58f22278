"""Nsight Compute's reading of a launch, for cross-checking the course's own instruments.

`ncu(code, kernel_regex)` runs `code` in a child Python under `ncu --clock-control none` (the GPU's clocks are
left as they are) and returns one `NcuRow` per profiled launch whose kernel name matches: its grid and block
as ncu saw them and the requested metrics as numbers. The course asks ncu for occupancy:

    sm__warps_active.avg.pct_of_peak_sustained_active   achieved occupancy: resident warps per active cycle,
                                                        over the SM's maximum
    sm__maximum_warps_per_active_cycle_pct              theoretical occupancy
    launch__occupancy_limit_{registers,shared_mem,warps,blocks}
                                                        blocks per SM each resource alone allows

ncu is a tool of the GPU machine (CUDA toolkit); where it is missing, `available()` says so and nothing runs.
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from launchlab.core import paths

OCCUPANCY_METRICS = ("sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
                     "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
                     "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks", "launch__grid_size",
                     "launch__block_size", "launch__registers_per_thread")
ROOT = paths.ROOT


class ProfileError(RuntimeError):
    pass


@dataclass
class NcuRow:
    kernel: str                 # ncu's (demangled) kernel name
    launch: int                 # ncu's launch ID, in launch order
    metrics: dict[str, float]

    @property
    def grid(self) -> int:
        return int(self.metrics["launch__grid_size"])

    @property
    def block(self) -> int:
        return int(self.metrics["launch__block_size"])

    @property
    def achieved_pct(self) -> float:
        return self.metrics["sm__warps_active.avg.pct_of_peak_sustained_active"]

    @property
    def theoretical_pct(self) -> float:
        return self.metrics["sm__maximum_warps_per_active_cycle_pct"]


def available() -> str | None:
    """Path of ncu (PATH, then the CUDA toolkit's usual place), or None."""
    for cand in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if cand and Path(cand).exists():
            return cand
    return None


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse_csv(text: str, metrics=OCCUPANCY_METRICS) -> list[NcuRow]:
    """ncu --csv output (one line per launch x metric; other lines ignored) -> one NcuRow per launch."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows: dict[int, NcuRow] = {}
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        if r.get("Metric Name") not in metrics:
            continue
        lid = int(r["ID"])
        row = rows.setdefault(lid, NcuRow(r["Kernel Name"], lid, {}))
        row.metrics[r["Metric Name"]] = _number(r["Metric Value"])
    return [rows[k] for k in sorted(rows)]


def ncu(code: str, kernel_regex: str, metrics=OCCUPANCY_METRICS, timeout: int = 300) -> list[NcuRow]:
    """Profile every launch of a kernel matching `kernel_regex` that `code` (Python, run in a child with this
    package importable) makes."""
    exe = available()
    if exe is None:
        raise ProfileError("ncu (Nsight Compute) is not installed on this machine")
    cmd = [exe, "--clock-control", "none", "--csv", "--print-units", "base", "--metrics", ",".join(metrics),
           "-k", f"regex:{kernel_regex}", sys.executable, "-c", code]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    rows = parse_csv(p.stdout, metrics)
    if p.returncode != 0 or not rows:
        tail = (p.stderr or p.stdout).strip().splitlines()[-6:]
        raise ProfileError(f"ncu exited {p.returncode} with {len(rows)} profiled launches: " + " | ".join(tail))
    return rows
