"""kernels/kda_contrast.cu's host side: §3's contrast kernel, the KDA decode step in the lecture's shape.

The lecture's kernel took 87 µs against a ~0.9 µs floor (96.7x, which it rounds to 95x); main's kernel in this
course, already a warp per column, takes ~26 µs on the same bytes (~35x). This kernel is the shape the lecture's
regime implies: grid = n_head, one thread per state column (blockDim.x = V = 128), a serial walk over the K = 128
rows in each pass, the product staged in global memory (the `store` traffic: four trips of the state). It runs
the same step on the same inputs as kernels/kda_decode.cu and is checked against the same float64 reference;
its sums are serial per thread, so it is not byte-identical to main's kernel (it need not be: it is a contrast,
never a fix).

`plan` gives the geometry, `step` validates and launches, `Bench` reuses kda_decode.Bench's inputs, state copies
and instruments with this kernel as the launch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from launchlab.core import diagnosis, hardware, launch, loader, mode, occupancy
from launchlab.kernels import kda_decode

FAMILY = "kda_contrast"
EXPR = "kda_column"
K = kda_decode.K
V = kda_decode.V
reference = kda_decode.reference
inputs = kda_decode.inputs


class ContrastError(launch.LaunchError):
    pass


@dataclass(frozen=True)
class Plan:
    n_head: int
    v: int

    @property
    def grid(self) -> tuple[int]:
        return (self.n_head,)             # one block per head: the lecture's grid = n_head

    @property
    def blocks(self) -> int:
        return self.n_head

    @property
    def block(self) -> int:
        return self.v                     # one thread per state column

    @property
    def columns_per_thread(self) -> int:
        return self.v // self.block

    @property
    def rows_walked(self) -> int:
        return K                          # each pass walks the column's K rows one after another

    def bytes_moved(self) -> int:
        return kda_decode.bytes_moved(self.n_head, self.v, "store")


def plan(n_head: int, v: int = V) -> Plan:
    if isinstance(n_head, bool) or not isinstance(n_head, (int, np.integer)) or n_head < 1:
        raise ContrastError(f"n_head must be a positive integer, got {n_head!r}")
    if n_head > 65535:
        raise ContrastError(f"n_head = {n_head}: grid = n_head cannot exceed 65535 blocks")
    if v != V:
        raise ContrastError(f"the contrast kernel is built for V = {V} (one thread per column: a block of {V}); "
                            f"got V = {v}")
    return Plan(int(n_head), int(v))


def geometry(n_head: int, gpu="H200") -> diagnosis.Geometry:
    p = plan(n_head)
    regs, smem = loader.resources(FAMILY, EXPR)
    occ = occupancy.occupancy(p.block, regs, smem, gpu)
    return diagnosis.Geometry(p.blocks, hardware.spec(gpu).sm_count, occ.blocks_per_sm)


def step(q, k, v, g, beta, state, o, scratch) -> Plan:
    """One decode step on CuPy arrays, in place on `state` (the product staged in `scratch`)."""
    mode.require_live("launching the KDA contrast kernel")
    n_head, v_dim = v.shape
    p = plan(n_head, v_dim)
    kda_decode.validate(q, k, v, g, beta, state, o, n_head, v_dim)
    if scratch is None or scratch.shape != state.shape or scratch.dtype != state.dtype:
        raise ContrastError(f"scratch must be a float32 buffer shaped like the state {state.shape}")
    loader.kernel(FAMILY, EXPR).launch(p.grid, p.block, (q, k, v, g, beta, state, scratch, o, np.int32(v_dim)))
    return p


class Bench(kda_decode.Bench):
    """kda_decode.Bench's inputs, state copies and instruments (hot graph, cold graph over state copies,
    events), launching the contrast kernel. The arguments that choose main's variants are ignored."""

    def run(self, bv=None, mode_=None, body=None, copy: int | None = None):
        state, scratch = (self.state, self.scratch) if copy is None else self.copies[copy]
        return step(self.q, self.k, self.vv, self.g, self.beta, state, self.o, scratch)
