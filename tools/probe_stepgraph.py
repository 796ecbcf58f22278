"""Probe (device): which driver graph operations a captured decode step supports (launchlab.core.stepgraph)."""
import os
import sys

import cupy as cp
from cuda.bindings import driver as drv

from launchlab.core import gates, pdl, slices, timing
from launchlab.kernels import decode


def probe(pdl_on: str):
    with gates.setting(PDL=pdl_on):
        m = decode.build(decode.Config(layers=3), ctx=8189, extra=8)
        m.step(8189); m.step(8194); cp.cuda.Device().synchronize()
        stream = slices.stream()
        taps = m.taps = []
        try:
            g = timing.capture(lambda: m.step(8189), 1, stream)
        finally:
            m.taps = None
        err, n = drv.cuGraphGetNodes(drv.CUgraph(g.graph), 0)[0::2] if False else (None, None)
        err, nodes, num = drv.cuGraphGetNodes(drv.CUgraph(g.graph), 0)
        err, nodes, num = drv.cuGraphGetNodes(drv.CUgraph(g.graph), num)
        types = {}
        for nd in nodes:
            e, t = drv.cuGraphNodeGetType(nd)
            types[str(t).split(".")[-1]] = types.get(str(t).split(".")[-1], 0) + 1
        print(f"PDL={pdl_on}: {num} nodes {types}, taps {len(taps)}")
        print("  clone:", drv.cuGraphClone(drv.CUgraph(g.graph))[0])
        big = drv.cuGraphCreate(0)[1]
        print("  child:", drv.cuGraphAddChildGraphNode(big, None, 0, drv.CUgraph(g.graph))[0])
        g.launch(stream); stream.synchronize()         # instantiates
        recs = m.position_launches(8193)
        from launchlab.core import stepgraph
        node = drv.CUgraphNode(int(taps[1]))
        e, p = drv.cuGraphKernelNodeGetParams(node)
        print("  get params:", e)
        r = recs[1]
        slots, ptrs = stepgraph.params_array(r.words)
        import ctypes
        p.func = drv.CUfunction(r.function); p.gridDimX, p.gridDimY, p.gridDimZ = r.grid
        p.blockDimX, p.blockDimY, p.blockDimZ = r.block; p.sharedMemBytes = r.smem
        p.kernelParams = ctypes.addressof(ptrs); p.extra = 0
        print("  exec set params:", drv.cuGraphExecKernelNodeSetParams(drv.CUgraphExec(g.graphExec), node, p))
        print("  graph set params:", drv.cuGraphKernelNodeSetParams(node, p))


for v in sys.argv[1:] or ["1", "0"]:
    try:
        probe(v)
    except Exception as e:
        print(f"PDL={v}: {type(e).__name__}: {e}")
