"""One decode token of the whole step under compute-sanitizer, under the `main` preset and the fixed defaults:
every kernel the step launches (the course's and cuBLAS's), at a short context.

    compute-sanitizer --tool memcheck python3 tools/decode_sanitize.py [LAYERS] [CTX]   (default 93 256)
"""
import sys

import cupy as cp
import numpy as np

from launchlab import decode, gates

layers = int(sys.argv[1]) if len(sys.argv) > 1 else decode.FULL_LAYERS
ctx = int(sys.argv[2]) if len(sys.argv) > 2 else 256
m = decode.build(decode.Config(layers=layers), ctx=ctx, extra=2)
for i, name in enumerate(("main", "fixed")):
    with gates.setting(**gates.preset(name)):
        log = m.launches(ctx + i)
        cp.cuda.Device().synchronize()
    logits = cp.asnumpy(m.buf["logits"])
    print(f"{name}: {len(log)} launches, {sum(x.kernel.startswith('rms_norm:') for x in log)} RMS norms, "
          f"token {int(m.buf['token'][0])}, logits finite: {bool(np.all(np.isfinite(logits)))}", flush=True)
