"""Launch geometry, checked before any launch.

A bad launch that reaches the driver fails late and vaguely ("invalid argument", "too many resources
requested for launch") and, for some errors, leaves the CUDA context unusable for the rest of the session.
`check` turns every such case into a LaunchError that says what is wrong and what the limit is, before the
launch, so the notebook's kernel keeps working.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

from launchlab.core import hardware


class LaunchError(ValueError):
    """A launch configuration that cannot run; raised before the launch."""


@dataclass(frozen=True)
class Geometry:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem: int
    static_smem: int

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def smem_per_block(self) -> int:
        return self.dynamic_smem + self.static_smem


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise LaunchError(f"{what} must be a whole number, got {value!r} ({type(value).__name__})")
    return int(value)


def _dims(value, what: str) -> tuple[int, int, int]:
    if isinstance(value, (tuple, list)):
        if not 1 <= len(value) <= 3:
            raise LaunchError(f"{what} must have 1 to 3 dimensions, got {len(value)}")
        dims = [_int(v, f"{what}[{i}]") for i, v in enumerate(value)]
    else:
        dims = [_int(value, what)]
    dims += [1] * (3 - len(dims))
    return tuple(dims)  # type: ignore[return-value]


def check(grid, block, dynamic_smem: int = 0, *, static_smem: int = 0, regs: int | None = None,
          max_threads: int | None = None, gpu="H200") -> Geometry:
    """Validate a launch; return its normalized Geometry or raise LaunchError.

    grid, block    int or 1-3 ints
    dynamic_smem   bytes of dynamic shared memory per block
    static_smem    the kernel's static shared memory (its attributes, or ptxas)
    regs           registers per thread, if known: checks the block's registers fit the SM
    max_threads    the kernel's own maximum threads per block (its attributes), if known
    """
    s = hardware.spec(gpu)
    g = _dims(grid, "grid")
    b = _dims(block, "block")
    dyn = _int(dynamic_smem, "dynamic shared memory")
    stat = _int(static_smem, "static shared memory")

    for i, (v, lim) in enumerate(zip(g, s.max_grid_dims)):
        axis = "xyz"[i]
        if v < 1:
            raise LaunchError(f"grid.{axis} = {v}: a grid needs at least one block on every axis")
        if v > lim:
            raise LaunchError(f"grid.{axis} = {v} exceeds the {s.name} limit of {lim}")
    for i, (v, lim) in enumerate(zip(b, s.max_block_dims)):
        axis = "xyz"[i]
        if v < 1:
            raise LaunchError(f"block.{axis} = {v}: a block needs at least one thread on every axis")
        if v > lim:
            raise LaunchError(f"block.{axis} = {v} exceeds the {s.name} limit of {lim}")
    threads = b[0] * b[1] * b[2]
    if threads > s.max_threads_per_block:
        raise LaunchError(f"a block of {threads} threads exceeds the {s.name} limit of "
                          f"{s.max_threads_per_block} threads per block")
    if max_threads is not None and threads > max_threads:
        raise LaunchError(f"a block of {threads} threads exceeds this kernel's limit of {max_threads} "
                          f"(set by its register use or __launch_bounds__)")
    if dyn < 0:
        raise LaunchError(f"dynamic shared memory cannot be negative ({dyn} bytes)")
    if stat + dyn > s.smem_per_block_optin:
        raise LaunchError(
            f"{stat + dyn} bytes of shared memory per block ({stat} static + {dyn} dynamic) exceeds the "
            f"{s.name} limit of {s.smem_per_block_optin} bytes ({s.smem_per_block_optin // 1024} KiB with "
            f"opt-in; the runtime reserves another {s.reserved_smem_per_block} B per block)")
    if regs is not None:
        regs = _int(regs, "registers per thread")
        warps = -(-threads // s.warp_size)
        per_warp = -(-(regs * s.warp_size) // 256) * 256
        if regs > 255 or per_warp * warps > s.regs_per_block:
            raise LaunchError(f"a block of {threads} threads at {regs} registers per thread needs "
                              f"{per_warp * warps} registers; a block may use at most {s.regs_per_block}")
    return Geometry(g, b, dyn, stat)


def address(a) -> int:
    """The device or host address of an array's first element (CuPy or numpy)."""
    data = getattr(a, "data", None)
    if hasattr(data, "ptr"):
        return int(data.ptr)
    return int(a.ctypes.data)


def aligned16(*arrays) -> bool:
    """True when every array starts on a 16-byte boundary: what a float4 load or store needs."""
    return all(address(a) % 16 == 0 for a in arrays)
