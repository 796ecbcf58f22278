"""One decode token of the whole step under compute-sanitizer, under the `main` preset and the fixed defaults:
every kernel the step launches (the course's and cuBLAS's), at a short context -- on the decode chain's path
with programmatic dependent launch (LAUNCHLAB_PDL=1, both presets), on a non-blocking stream (the legacy
default stream serializes every launch, so PDL would never overlap there), then the same step replayed from a
CUDA graph (where the programmatic edges are graph edges).

    compute-sanitizer --tool memcheck python3 tools/decode_sanitize.py [LAYERS] [CTX]   (default 93 256)
"""
import sys

import cupy as cp
import numpy as np

from launchlab.core import gates, timing
from launchlab.kernels import decode

layers = int(sys.argv[1]) if len(sys.argv) > 1 else decode.FULL_LAYERS
ctx = int(sys.argv[2]) if len(sys.argv) > 2 else 256
m = decode.build(decode.Config(layers=layers), ctx=ctx, extra=4)
stream = cp.cuda.Stream(non_blocking=True)
for i, name in enumerate(("main", "fixed")):
    with gates.setting(**dict(gates.preset(name), PDL="1")), stream:
        log = m.launches(ctx + 2 * i)
        stream.synchronize()
        eager = cp.asnumpy(m.buf["logits"])
        g = timing.capture(lambda: m.step(ctx + 2 * i + 1), 1, stream)
        g.launch(stream)
        stream.synchronize()
    logits = cp.asnumpy(m.buf["logits"])
    print(f"{name}: {len(log)} launches, {sum(x.kernel.startswith('rms_norm:') for x in log)} RMS norms, PDL on, "
          f"eager then one graph replay; tokens {int(m.buf['token'][0])}, logits finite: "
          f"{bool(np.all(np.isfinite(eager)) and np.all(np.isfinite(logits)))}", flush=True)
