"""The driver's occupancy answers, swept over thousands of configurations, and the calculator checked
against them.

On the GPU, `driver_table()` loads kernels/occupancy_probe.cu (one body at many register caps and static
shared-memory sizes), opts each into the full dynamic shared memory, and asks
cuOccupancyMaxActiveBlocksPerMultiprocessor for every block size and dynamic shared-memory size. Each row is
(registers per thread, static smem, dynamic smem, block, driver's blocks per SM). The recording of that
table lets any machine check `occupancy.blocks_per_sm` row by row.
"""
from __future__ import annotations

from dataclasses import dataclass, field


from launchlab.core.width import fit
from launchlab.core import hardware, loader, mode, occupancy, recordings, sources
from launchlab.core.door import Door
from launchlab.core.progress import Progress
from launchlab.core.recordings import RECORDED
from launchlab.kernels.occupancy_probe import FAMILY, check_probe_outputs

BLOCKS = tuple(range(32, 1025, 32)) + (1, 17, 33, 65, 100, 129, 200, 257, 500, 641, 999)
DYN_SMEM = (0, 1, 1024, 2048, 4000, 7 * 1024, 12 * 1024, 16 * 1024, 20 * 1024, 24 * 1024, 30 * 1024,
            36 * 1024, 44 * 1024, 48 * 1024, 50 * 1024, 56 * 1024, 64 * 1024, 72 * 1024, 76 * 1024,
            90 * 1024, 100 * 1024, 112 * 1024, 113 * 1024, 120 * 1024, 150 * 1024, 180 * 1024, 200 * 1024,
            226 * 1024, 227 * 1024)
COLUMNS = ("regs", "static_smem", "dynamic_smem", "block", "driver_blocks_per_sm")


def driver_table(blocks=BLOCKS, dyn_smem=DYN_SMEM, progress=None) -> tuple[list[list[int]], dict]:
    """Ask the driver for every (kernel variant, block, dynamic smem). Returns rows and per-variant info."""
    mode.require_live("the driver's occupancy sweep")
    import cupy as cp

    s = hardware.from_device()
    rows, info = [], {}
    exprs = sources.FAMILIES[FAMILY]
    for i, e in enumerate(exprs):
        k = loader.kernel(FAMILY, e)
        regs, static = k.registers, k.smem_static
        k.raw.max_dynamic_shared_size_bytes = s.smem_per_block_optin - static
        info[e] = {"regs": regs, "static_smem": static, "max_threads_per_block": k.max_threads_per_block,
                   "local_bytes": int(k.attributes["local_size_bytes"])}
        for b in blocks:
            for d in dyn_smem:
                if static + d > s.smem_per_block_optin:
                    continue
                n = int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(k.raw.kernel.ptr, b, d))
                rows.append([regs, static, d, b, n])
        if progress:
            progress(i + 1, len(exprs))
    return rows, info


def mismatches(rows, gpu="H200") -> list[tuple[list[int], int]]:
    """Rows where occupancy.blocks_per_sm disagrees with the driver: [(row, calculator's answer)]."""
    bad = []
    for r in rows:
        regs, static, dyn, block, drv = r
        mine = occupancy.blocks_per_sm(block, regs, static + dyn, gpu)
        if mine != drv:
            bad.append((r, mine))
    return bad


@dataclass
class ProbeVariant:
    regs: int
    static_smem: int
    max_threads_per_block: int
    local_bytes: int


@dataclass
class OccupancyCheck:
    """The driver's answers, row by row, and whether every probe variant computes the numpy reference."""
    columns: list[str]
    rows: list[list[int]]
    variants: dict[str, ProbeVariant]
    probe_outputs_match_reference: dict[str, bool]
    source: str = field(default="", metadata={RECORDED: False})

    def mismatches(self, gpu="H200") -> list[tuple[list[int], int]]:
        return mismatches(self.rows, gpu)

    def describe(self) -> str:
        regs = sorted({r[0] for r in self.rows})
        return fit(f"{len(self.rows)} driver answers ({len(regs)} register counts from {regs[0]} to {regs[-1]}, "
                f"static + dynamic shared memory up to {max(r[1] + r[2] for r in self.rows)} B, blocks "
                f"{min(r[3] for r in self.rows)}..{max(r[3] for r in self.rows)}): "
                f"{len(self.mismatches())} disagree")


def measure() -> OccupancyCheck:
    rows, info = driver_table(progress=Progress("occupancy sweep"))
    return OccupancyCheck(list(COLUMNS), rows, recordings.decode(dict[str, ProbeVariant], info),
                          check_probe_outputs(), "live")


def _parse(d: dict, source: str) -> OccupancyCheck:
    r = recordings.decode(OccupancyCheck, d, "occupancy")
    r.source = source
    return r


DOOR: Door[OccupancyCheck] = Door("driver occupancy sweep", "occupancy", (FAMILY,), measure, _parse,
                                  recordings.encode)
data = DOOR.data
recorded = DOOR.recorded


def headline(d: OccupancyCheck) -> dict:
    return {"occupancy_driver_answers": len(d.rows), "occupancy_calculator_mismatches": len(d.mismatches())}
