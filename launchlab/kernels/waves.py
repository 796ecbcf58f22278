"""kernels/waves.cu's host side: fixed_work (every block the same latency-bound job, residency pinned with
dynamic shared memory) and fixed_bytes (every block reads its own 64 KiB), their numpy references, and
`WaveKernels`, which launches either at any grid. The §1 staircases are launchlab.sections.s01_arithmetic.staircases.
"""
from __future__ import annotations

import numpy as np

from launchlab.core import hardware, loader, mode, occupancy
from launchlab.core import timeline as timeline_mod

FAMILY = "waves"
BLOCK = 64                   # 2 warps: with 4 blocks resident, 2 warps per scheduler, no issue contention
ITERS = 10000                # ~40k cycles of dependent FMAs: ~20 us per wave at ~2 GHz
A, B = 0.9999, 1.0e-4        # x -> a*x + b converges to 1: no overflow, no denormals
BYTES_BLOCK = 256            # fixed_bytes: threads per block
BYTES_PER_BLOCK = 64 * 1024  # fixed_bytes: every block reads its own 64 KiB


def residency_smem(r: int, block: int = BLOCK, regs: int = 16, gpu="H200") -> int:
    """Dynamic shared memory per block that makes exactly `r` blocks fit on an SM (and shared memory the
    limiter). Derived with the occupancy calculator, so it is right for any GPU spec."""
    s = hardware.spec(gpu)
    if r < 1:
        raise ValueError("residency must be at least 1 block per SM")
    # largest 128-byte-aligned allocation with r per SM, minus the runtime's reserved 1 KiB
    alloc = (s.smem_per_sm // r) // 128 * 128
    smem = min(alloc - s.reserved_smem_per_block, s.smem_per_block_optin)
    occ = occupancy.occupancy(block, regs, smem, s)
    if occ.blocks_per_sm != r or "shared memory" not in occ.limiter:
        raise ValueError(f"cannot pin residency to {r} blocks/SM with shared memory at block {block}: "
                         f"{occ.describe()}")
    return smem


def fixed_work_reference(block: int, iters: int = ITERS, a: float = A, b: float = B) -> np.ndarray:
    """numpy reference (float64) of one block's output of fixed_work."""
    x = 1.0e-3 * (np.arange(block, dtype=np.float64) + 1)
    for _ in range(iters):
        x = x * a + b
    return x


def fixed_bytes_reference(x: np.ndarray, grid: int, vec_per_block: int) -> np.ndarray:
    return np.asarray(x[: grid * vec_per_block * 4], np.float64).reshape(grid, -1).sum(axis=1)


class WaveKernels:
    """The two wave kernels on a live GPU."""

    def __init__(self, max_grid: int = 8192):
        mode.require_live("the wave-quantization kernels")
        import cupy as cp

        self.cp = cp
        self.spec = hardware.from_device()
        self.max_grid = max_grid
        self.out = cp.empty(max_grid * 1024, dtype=cp.float32)
        self.work = loader.kernel(FAMILY, "fixed_work")
        self.work_stamped = loader.kernel(FAMILY, "fixed_work_timeline")
        self.bytes_k = loader.kernel(FAMILY, "fixed_bytes")
        self.src = None

    def launch_work(self, grid: int, residency: int = 2, block: int = BLOCK, iters: int = ITERS,
                    timeline: bool | None = None):
        """fixed_work at `residency` blocks per SM; timeline=True (or LAUNCHLAB_TIMELINE=1) runs the twin that
        stamps each block's SM and lifetime (same shared memory, so the same residency), inside
        launchlab.core.timeline.capture()."""
        smem = residency_smem(residency, block, self.work.registers, self.spec)
        k = self.work_stamped if timeline_mod.stamped(FAMILY, timeline) else self.work
        k.launch(grid, block, (self.out, np.int32(iters), np.float32(A), np.float32(B)), smem=smem, spec=self.spec)
        return smem

    def _source(self, grid: int):
        need = grid * BYTES_PER_BLOCK // 4
        if self.src is None or self.src.size < need:
            self.src = self.cp.random.default_rng(1).random(max(need, 1 << 24), dtype=self.cp.float32)
        return self.src

    def launch_bytes(self, grid: int, block: int = BYTES_BLOCK):
        src = self._source(grid)
        self.bytes_k.launch(grid, block, (src, np.int32(BYTES_PER_BLOCK // 16), self.out), spec=self.spec)

    def check_references(self) -> dict:
        """Max relative error of both kernels against their numpy references."""
        cp = self.cp
        self.out[: 3 * BLOCK] = np.nan
        self.launch_work(3, 2, BLOCK, iters=1000)
        got = cp.asnumpy(self.out[: 3 * BLOCK]).reshape(3, BLOCK).astype(np.float64)
        ref = fixed_work_reference(BLOCK, 1000)
        e1 = float(np.max(np.abs(got - ref) / np.abs(ref)))
        grid = 37
        self.out[:grid] = np.nan
        self.launch_bytes(grid)
        got = cp.asnumpy(self.out[:grid]).astype(np.float64)
        ref = fixed_bytes_reference(cp.asnumpy(self._source(grid)), grid, BYTES_PER_BLOCK // 16)
        e2 = float(np.max(np.abs(got - ref) / np.abs(ref)))
        return {"fixed_work": e1, "fixed_bytes": e2}
