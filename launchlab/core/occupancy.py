"""Occupancy: how many blocks of a kernel fit on one SM at once, and which resource says so.

The arithmetic follows the rules NVIDIA publishes in CUDA's cuda_occupancy.h (the header behind the
Occupancy Calculator API) for compute capability 9.0, with the kernel opted in to the full dynamic shared
memory (as launchlab's launcher does):

  warps       max warps per SM (64) // ceil(block / 32)
  registers   registers are allocated per warp in units of 256 (regs * 32 rounded up), from 4 sub-partitions
              of 16,384 each: warps that fit = 4 * (16384 // per-warp allocation), then // warps per block.
              A block whose registers exceed 65,536 cannot launch at all.
  shared mem  per block: static + dynamic + the runtime's 1 KiB, rounded up to 128 B; SM has 228 KiB.
  block cap   32 resident blocks per SM on sm_90.

The answer is checked, configuration by configuration, against the driver's own
cudaOccupancyMaxActiveBlocksPerMultiprocessor on the H200 (data/recordings/occupancy.json and
tests/test_occupancy.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from launchlab.core import hardware

REG_ALLOC_UNIT = 256         # registers, per warp
MAX_REGS_PER_THREAD = 256    # what the calculator admits on sm_70+ (ptxas itself stops at 255)
SUB_PARTITIONS = 4
SMEM_ALLOC_UNIT = 128        # bytes, sm_80 and later

LIMITERS = ("warps", "registers", "shared memory", "block cap")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


@dataclass(frozen=True)
class Occupancy:
    """The occupancy of one launch configuration on one GPU."""
    block: int
    regs: int
    smem: int
    gpu: str
    blocks_per_sm: int            # max resident blocks per SM
    limits: dict                  # blocks per SM that each resource alone would allow
    limiter: tuple[str, ...]      # the resource(s) that bind (all that tie)
    warps_per_block: int
    warps_per_sm: int             # resident warps at that many blocks
    max_warps_per_sm: int
    sm_count: int
    regs_per_block: int           # as allocated
    smem_per_block: int           # as allocated (with the reserved 1 KiB and rounding)

    @property
    def fraction(self) -> float:
        """Theoretical occupancy: resident warps / the SM's maximum warps."""
        return self.warps_per_sm / self.max_warps_per_sm

    @property
    def blocks_per_wave(self) -> int:
        """How many blocks the whole GPU holds at once: SMs * blocks per SM."""
        return self.sm_count * self.blocks_per_sm

    @property
    def can_launch(self) -> bool:
        return self.blocks_per_sm > 0

    def describe(self) -> str:
        if not self.can_launch:
            return (f"block {self.block}, {self.regs} regs/thread, {self.smem} B smem: cannot launch "
                    f"({' and '.join(self.limiter)} allow 0 blocks per SM)")
        return (f"block {self.block}, {self.regs} regs/thread, {self.smem} B smem: "
                f"{self.blocks_per_sm} blocks/SM ({self.warps_per_sm}/{self.max_warps_per_sm} warps, "
                f"{self.fraction:.0%} occupancy),\n  limited by {' and '.join(self.limiter)}; "
                f"{self.blocks_per_wave} blocks per wave on {self.sm_count} SMs")


def occupancy(block: int, regs: int, smem: int = 0, gpu="H200") -> Occupancy:
    """Occupancy of a kernel with `regs` registers per thread and `smem` bytes of shared memory per block
    (static + dynamic, not counting the runtime's reserved 1 KiB), launched with `block` threads."""
    s = hardware.spec(gpu)
    for name, v in (("block", block), ("regs", regs), ("smem", smem)):
        if isinstance(v, bool) or not isinstance(v, int) and not hasattr(v, "__index__"):
            raise TypeError(f"{name} must be an integer, got {v!r}")
    block, regs, smem = int(block), int(regs), int(smem)
    if block < 1:
        raise ValueError(f"block must be at least 1 thread, got {block}")
    if regs < 0 or smem < 0:
        raise ValueError("regs and smem cannot be negative")
    big = 1 << 30

    warps = _ceil_div(block, s.warp_size)
    # warps
    lim_warps = 0 if block > s.max_threads_per_block else s.max_warps_per_sm // warps
    # registers
    per_warp = _round_up(regs * s.warp_size, REG_ALLOC_UNIT)
    regs_block = per_warp * warps
    assumed = per_warp * _round_up(warps, SUB_PARTITIONS)
    if s.regs_per_block < assumed or s.regs_per_block < regs_block or regs > MAX_REGS_PER_THREAD:
        lim_regs = 0
    elif per_warp == 0:
        lim_regs = big
    else:
        warps_per_sub = (s.regs_per_sm // SUB_PARTITIONS) // per_warp
        lim_regs = (warps_per_sub * SUB_PARTITIONS) // warps
    # shared memory
    alloc = _round_up(smem + s.reserved_smem_per_block, SMEM_ALLOC_UNIT)
    if smem > s.smem_per_block_optin or alloc > s.smem_per_block_optin + s.reserved_smem_per_block:
        lim_smem = 0
    else:
        lim_smem = s.smem_per_sm // alloc if alloc else big
    lim_blocks = s.max_blocks_per_sm

    limits = {"warps": lim_warps, "registers": lim_regs, "shared memory": lim_smem, "block cap": lim_blocks}
    n = min(limits.values())
    limiter = tuple(k for k in LIMITERS if limits[k] == n)
    return Occupancy(block=block, regs=regs, smem=smem, gpu=s.name, blocks_per_sm=n,
                     limits={k: (v if v < big else None) for k, v in limits.items()}, limiter=limiter,
                     warps_per_block=warps, warps_per_sm=n * warps, max_warps_per_sm=s.max_warps_per_sm,
                     sm_count=s.sm_count, regs_per_block=regs_block, smem_per_block=alloc)


def blocks_per_sm(block: int, regs: int, smem: int = 0, gpu="H200") -> int:
    """Max resident blocks per SM (the number cudaOccupancyMaxActiveBlocksPerMultiprocessor returns).
    `occupancy()` gives the same number with the limiter, the occupancy fraction and blocks per wave."""
    return occupancy(block, regs, smem, gpu).blocks_per_sm


def driver_blocks_per_sm(kern, block: int, dynamic_smem: int = 0) -> int:  # pragma: no mutate block (live only)
    """Ask the driver (live mode): cuOccupancyMaxActiveBlocksPerMultiprocessor for a loaded kernel.
    `kern` is a loader.Kernel or a cupy.RawKernel."""
    import cupy

    raw = getattr(kern, "raw", kern)
    return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(raw.kernel.ptr, block, dynamic_smem))


# ------------------------------------------------------------------ the grid -> SM arithmetic of §1
@dataclass(frozen=True)
class Coverage:
    grid: int
    sm_count: int
    blocks_per_sm: int

    @property
    def sms_with_work(self) -> int:
        """SMs that get at least one block (the block scheduler spreads blocks over idle SMs first)."""
        return min(self.grid, self.sm_count)

    @property
    def percent_sms(self) -> float:
        return 100.0 * self.sms_with_work / self.sm_count

    @property
    def blocks_per_wave(self) -> int:
        return self.sm_count * self.blocks_per_sm

    @property
    def waves(self) -> float:
        return self.grid / self.blocks_per_wave

    @property
    def full_waves(self) -> int:
        return self.grid // self.blocks_per_wave

    @property
    def tail_blocks(self) -> int:
        """Blocks in the last, partial wave (0 when the grid is a whole number of waves)."""
        return self.grid % self.blocks_per_wave

    def verdict(self) -> str:
        if self.grid < self.sm_count:
            return f"{self.sm_count - self.grid} of {self.sm_count} SMs idle"
        if self.tail_blocks == 0:
            return f"{self.full_waves} full wave{'s' if self.full_waves > 1 else ''}"
        fill = self.tail_blocks / self.blocks_per_wave
        if self.full_waves == 0:
            return f"one partial wave, {fill:.0%} full"
        return f"{self.full_waves} full wave{'s' if self.full_waves > 1 else ''} + a tail wave {fill:.0%} full"


def coverage(grid: int, gpu="H200", blocks_per_sm: int = 1) -> Coverage:
    """How a grid lands on the GPU's SMs; `blocks_per_sm` sets the wave size (SMs * blocks per SM)."""
    s = hardware.spec(gpu)
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 1:
        raise ValueError(f"grid must be a positive integer, got {grid!r}")
    if blocks_per_sm < 1:
        raise ValueError("blocks_per_sm must be at least 1")
    return Coverage(grid, s.sm_count, blocks_per_sm)
