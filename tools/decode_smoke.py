"""The decode step at full depth on a GPU: launches counted by kind, the RMS norms per token, memory, and one
step's time eager (host-bound: events around ~1,700 Python launches) and, where capture works, in a CUDA graph.

    python3 tools/decode_smoke.py [CTX ...]          (default 2048 131072)
"""
import statistics
import sys
import time

import cupy as cp

from launchlab.core import timing
from launchlab.kernels import decode

for ctx in [int(a) for a in sys.argv[1:]] or [2048, 131_072]:
    t0 = time.time()
    m = decode.build(decode.Config(), ctx=ctx, extra=16)
    built = time.time() - t0
    log = m.launches(ctx)
    kinds: dict = {}
    for x in log:
        kinds[x.kernel.split(":")[0]] = kinds.get(x.kernel.split(":")[0], 0) + 1
    norms = kinds.get("rms_norm", 0)
    ts = []
    for p in range(ctx + 1, ctx + 6):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        m.step(p)
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    free, total = cp.cuda.runtime.memGetInfo()
    print(f"ctx {ctx:,}: built in {built:.1f} s; {len(log)} launches {kinds}; {norms} RMS norms per token; "
          f"GPU memory {(total - free) / 2**30:.1f} GiB; eager step (events, host-bound) median "
          f"{statistics.median(ts):.2f} ms", flush=True)
    stream = cp.cuda.Stream(non_blocking=True)
    try:
        g = timing.capture(lambda: m.step(ctx + 6), 1, stream)
        t = timing._replay(g, stream, 1, 5, 2)
        print(f"ctx {ctx:,}: one step in a CUDA graph: {[round(x / 1e3, 3) for x in t]} ms", flush=True)
    except Exception as e:  # noqa: BLE001 -- the smoke run reports what capture says and goes on
        print(f"ctx {ctx:,}: graph capture failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
    del m
    cp.get_default_memory_pool().free_all_blocks()
