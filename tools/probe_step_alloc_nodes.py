"""Probe (device): which kernels of a captured decode step sit next to its MEM_ALLOC nodes."""
import cupy as cp
from cuda.bindings import driver as drv

from launchlab.core import slices, timing
from launchlab.kernels import decode

m = decode.build(decode.Config(layers=3), ctx=8189, extra=8)
m.step(8189)
cp.cuda.Device().synchronize()
g = timing.capture(lambda: m.step(8190), 1, slices.stream())
G = drv.CUgraph(g.graph)
_, _, n = drv.cuGraphGetNodes(G, 0)
_, nodes, n = drv.cuGraphGetNodes(G, n)


def name(nd):
    _, t = drv.cuGraphNodeGetType(nd)
    if t == drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
        _, p = drv.cuGraphKernelNodeGetParams(nd)
        e, s = drv.cuFuncGetName(p.func)
        return f"kernel {s.decode() if isinstance(s, bytes) else s} grid {p.gridDimX}x{p.gridDimY}"
    if t == drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        _, p = drv.cuGraphMemAllocNodeGetParams(nd)
        return f"alloc {p.bytesize} B"
    return str(t).split(".")[-1]


for nd in nodes:
    _, t = drv.cuGraphNodeGetType(nd)
    if t == drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        r = drv.cuGraphNodeGetDependencies(nd, 0)
        deps = drv.cuGraphNodeGetDependencies(nd, r[-1])[1] if r[-1] else []
        r = drv.cuGraphNodeGetDependentNodes(nd, 0)
        outs = drv.cuGraphNodeGetDependentNodes(nd, r[-1])[1] if r[-1] else []
        print(name(nd), "| after:", [name(x) for x in deps], "| before:", [name(x) for x in outs])
