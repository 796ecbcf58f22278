"""Issue 29, first measurement: does a green context of N SMs hold CuPy launches to N SMs, and when not?

    python tools/green_probe.py OUT.json        (on a GPU; prints a table, writes the rows)

For each requested N: split the device's SM resource (cuDevSmResourceSplitByCount, one group, minCount N),
make a green context of the group, push it current, and launch a kernel that stamps every block's %smid (528
blocks of 256 threads, each spinning a fixed time) -- once from a module loaded inside the green context, once
from a module loaded before it in the primary context (CuPy's module cache keeps such a one). Distinct SMs seen
and the launch's time (CUDA events) per row; also the device's own granularity fields (minSmPartitionSize,
smCoscheduledAlignment). Order matters for the issue's open case (the first context made, asked for 8 SMs, ran
on all 132), so the Ns run in the order given, 8 first.
"""
from __future__ import annotations

import json
import sys

import cupy as cp
import numpy as np
from cuda.bindings import driver as drv

SRC = r"""
extern "C" __global__ void stamp(int* sm, long long spin_ns) {
    unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    unsigned long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long t = t0;
    while (t - t0 < (unsigned long long)spin_ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (threadIdx.x == 0) sm[blockIdx.x] = (int)s;
}
"""
BLOCKS, THREADS, SPIN_NS = 528, 256, 20000


def ok(r):
    """cuda-bindings returns (err, *values): raise on an error, else the value (or the values)."""
    err, *vals = r if isinstance(r, tuple) else (r,)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{err}")
    return vals[0] if len(vals) == 1 else (tuple(vals) if vals else None)


def run(kern) -> tuple[int, float, list[int]]:
    sm = cp.full(BLOCKS, -1, dtype=cp.int32)
    kern((BLOCKS,), (THREADS,), (sm, np.int64(SPIN_NS)))          # warm
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record()
    kern((BLOCKS,), (THREADS,), (sm, np.int64(SPIN_NS)))
    b.record()
    b.synchronize()
    ids = sorted(set(int(x) for x in cp.asnumpy(sm)))
    return len(ids), cp.cuda.get_elapsed_time(a, b) * 1e3, ids


def main(out: str, ns=(8, 16, 32, 64, 128, 24, 8, 12, 136, 0)) -> int:
    cp.cuda.Device(0).use()
    cp.zeros(1)                                       # the primary context, as CuPy makes it
    dev = ok(drv.cuDeviceGet(0))
    res = ok(drv.cuDeviceGetDevResource(dev, drv.CUdevResourceType.CU_DEV_RESOURCE_TYPE_SM))
    info = {"sm_count": res.sm.smCount, "min_partition": res.sm.minSmPartitionSize,
            "alignment": res.sm.smCoscheduledAlignment, "driver": ok(drv.cuDriverGetVersion())}
    print(info)
    primary_mod = cp.RawModule(code=SRC)
    primary_kern = primary_mod.get_function("stamp")
    n_all, us_all, _ = run(primary_kern)
    rows = [{"n": 132, "how": "primary context", "sms_seen": n_all, "us": us_all}]
    for n in ns:
        row = {"n": n}
        try:
            groups, nb, rem = ok(drv.cuDevSmResourceSplitByCount(1, res, 0, n))
            row["groups"] = nb
            row["split_sm_count"] = groups[0].sm.smCount if nb else 0
            row["remaining"] = rem.sm.smCount
            desc = ok(drv.cuDevResourceGenerateDesc([groups[0]], 1))
            g = ok(drv.cuGreenCtxCreate(desc, dev, drv.CUgreenCtxCreate_flags.CU_GREEN_CTX_DEFAULT_STREAM))
            ctx = ok(drv.cuCtxFromGreenCtx(g))
            ok(drv.cuCtxPushCurrent(ctx))
            try:
                stale = run(primary_kern)                  # a function loaded before, in the primary context
                row["stale_module_sms_seen"], row["stale_module_us"] = stale[0], stale[1]
            except Exception as e:                          # noqa: BLE001 -- recorded, not hidden
                row["stale_module_error"] = str(e)[:200]
            fresh = cp.RawModule(code=SRC).get_function("stamp")
            row["sms_seen"], row["us"], ids = run(fresh)
            row["sm_ids"] = ids
            ok(drv.cuCtxPopCurrent())
            ok(drv.cuGreenCtxDestroy(g))
        except Exception as e:                              # noqa: BLE001
            row["error"] = str(e)[:300]
        rows.append(row)
        print({k: v for k, v in row.items() if k != "sm_ids"}, flush=True)
    json.dump({"device": info, "rows": rows, "blocks": BLOCKS, "threads": THREADS, "spin_ns": SPIN_NS},
              open(out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
