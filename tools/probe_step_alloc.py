"""Probe (device): where an eager decode step allocates device memory (CuPy's LineProfileHook)."""
import cupy as cp
from cupy.cuda import memory_hooks

from launchlab.kernels import decode

m = decode.build(decode.Config(layers=3), ctx=8189, extra=8)
m.step(8189)
cp.cuda.Device().synchronize()
hook = memory_hooks.LineProfileHook(max_depth=12)
with hook:
    m.step(8190)
cp.cuda.Device().synchronize()
hook.print_report()
