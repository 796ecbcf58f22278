"""A decode step captured once, replayed at every position: the graph of N steps without N steps of Python.

Capturing a CUDA graph costs the host what running the steps eagerly costs: Python issues every one of the
step's ~1,700 launches into the capture. Yet consecutive decode steps differ in only a few launches: those whose
arguments carry the position (MLA's rope-and-pack writes the cache row at `pos`; the split-KV decode and its
combine read `pos + 1` tokens, which can change their split count, grid and shared memory). Everything else --
the norms, the cuBLAS GEMMs, the KDA steps over their in-place state, the argmax that feeds the next step's
embedding -- reads and writes the same buffers at every position.

So the model captures one step (its graph keeps the step's programmatic-dependent-launch edges), taps the graph
node of each position-dependent launch while it is captured (launchlab.core.pdl.tapping), and for every
position records what those launches would be without making them (pdl.recording: the same launch check,
plan and parameters as a real launch). Per position, the captured step's graph is cloned in the driver
(cuGraphClone), the tapped nodes' parameters are set to the position's (cuGraphKernelNodeSetParams) and the
clone becomes the next child graph of a chain (cuGraphAddChildGraphNode). Building the graph of N steps then
costs one captured step, N recordings of a few launches, and N clones in C.

What differs from N steps captured one by one: the boundary between two steps is an ordinary graph edge
between two child graphs, where a capture of the whole sequence put a programmatic edge between one step's
argmax and the next step's embedding. Inside every step the graph is the captured one. `python -m launchlab
bench step-graph` measures both graphs side by side (their bytes are identical: tests/test_stepgraph.py), and
LAUNCHLAB_STEP_GRAPH=every builds the graph the old way: every step captured.
"""
from __future__ import annotations

import ctypes
import os

from launchlab.core import pdl

ENV = "LAUNCHLAB_STEP_GRAPH"
CHOICES = ("once", "every")     # once: capture one step, patch the rest (default); every: capture every step


class StepGraphError(RuntimeError):
    pass


def how() -> str:
    """How a decode model builds the graph of several steps (LAUNCHLAB_STEP_GRAPH, default `once`)."""
    v = os.environ.get(ENV, "").strip() or CHOICES[0]
    if v not in CHOICES:
        raise StepGraphError(f"{ENV}={v!r}: `once` captures one step and patches every later position into it, "
                             f"`every` captures every step")
    return v


def _ok(result, what: str):  # pragma: no mutate block (live only)
    from cuda.bindings import driver as drv
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise StepGraphError(f"{what}: {err}")
    return rest[0] if len(rest) == 1 else rest


def params_array(words: tuple[int, ...]) -> tuple[ctypes.Array, ctypes.Array]:
    """The void** a kernel node's parameters are read through: one 64-bit slot per parameter (kept alive by the
    caller until the driver has copied them)."""
    slots = (ctypes.c_uint64 * max(1, len(words)))(*words)
    base = ctypes.addressof(slots)
    return slots, (ctypes.c_void_p * max(1, len(words)))(*[base + 8 * i for i in range(len(words))])


class StepGraph:  # pragma: no mutate block (live only)
    """The steps at N positions as one executable graph: `template` (a CuPy Graph of one captured step), its
    `taps` (the nodes of the position-dependent launches, in launch order) and, per position, those launches
    recorded (`per_position`: one list of pdl.Recorded per position, as long as `taps`)."""

    def __init__(self, template, taps: list, per_position: list[list[pdl.Recorded]]):
        from cuda.bindings import driver as drv
        if not per_position:
            raise StepGraphError("a step graph needs at least one position")
        for i, recs in enumerate(per_position):
            if len(recs) != len(taps):
                raise StepGraphError(f"position {i}: {len(recs)} position-dependent launches recorded, the captured "
                                     f"step has {len(taps)}: the step's launches depend on its position in a way "
                                     f"the template cannot follow (LAUNCHLAB_STEP_GRAPH=every captures every step)")
        self._template = template            # keeps the captured graph (and its tapped nodes) alive while building
        self.steps = len(per_position)
        self.graph = _ok(drv.cuGraphCreate(0), "cuGraphCreate")
        self.exec = None
        prev = None
        try:
            for recs in per_position:
                clone = _ok(drv.cuGraphClone(drv.CUgraph(template.graph)), "cuGraphClone")
                try:
                    keep = [self._patch(drv.CUgraphNode(int(node)), clone, r) for node, r in zip(taps, recs)]
                    deps = [prev] if prev is not None else None
                    prev = _ok(drv.cuGraphAddChildGraphNode(self.graph, deps, len(deps or ()), clone),
                               "cuGraphAddChildGraphNode")
                    del keep
                finally:
                    drv.cuGraphDestroy(clone)
            self.exec = _ok(drv.cuGraphInstantiate(self.graph, 0), "cuGraphInstantiate")
        except Exception:
            self.close()
            raise
        self._template = None

    @staticmethod
    def _patch(original, clone, r: pdl.Recorded):
        from cuda.bindings import driver as drv
        node = _ok(drv.cuGraphNodeFindInClone(original, clone), "cuGraphNodeFindInClone")
        p = _ok(drv.cuGraphKernelNodeGetParams(node), "cuGraphKernelNodeGetParams")
        slots, ptrs = params_array(r.words)
        p.func = drv.CUfunction(r.function)
        p.gridDimX, p.gridDimY, p.gridDimZ = r.grid
        p.blockDimX, p.blockDimY, p.blockDimZ = r.block
        p.sharedMemBytes = r.smem
        p.kernelParams = ctypes.addressof(ptrs)
        p.extra = 0
        _ok(drv.cuGraphKernelNodeSetParams(node, p), "cuGraphKernelNodeSetParams")
        return slots, ptrs

    def launch(self, stream) -> None:
        from cuda.bindings import driver as drv
        _ok(drv.cuGraphLaunch(self.exec, drv.CUstream(stream.ptr)), "cuGraphLaunch")

    def close(self) -> None:
        from cuda.bindings import driver as drv
        if self.exec is not None:
            drv.cuGraphExecDestroy(self.exec)
            self.exec = None
        if self.graph is not None:
            drv.cuGraphDestroy(self.graph)
            self.graph = None

    def __del__(self):
        try:
            self.close()
        except Exception:       # interpreter shutdown: the driver may be gone already
            pass
