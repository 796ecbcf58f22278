"""Probe (device): do the decode step's bytes move when cuBLAS keeps the course's workspace after SetStream?"""
import hashlib

import cupy as cp

from launchlab.kernels import decode


def run(layers=5, ctx=20_000, n=4):
    m = decode.build(decode.Config(layers=layers), ctx=ctx, extra=n)
    h = hashlib.sha256()
    for p in range(ctx, ctx + n):
        m.step(p)
        h.update(cp.asnumpy(m.buf["logits"]).tobytes())
    return h.hexdigest()[:16]


fixed = run()


def old_stream(self):
    self._ok(self.lib.cublasSetStream_v2(self.handle, cp.cuda.get_current_stream().ptr), "SetStream")


decode._Cublas._stream = old_stream
old = run()
print(f"logits over 4 steps: workspace kept {fixed}, reset by SetStream {old}: "
      + ("IDENTICAL" if fixed == old else "DIFFER"))
