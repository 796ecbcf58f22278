"""`python -m launchlab selftest`: every kernel against its numpy reference, on small inputs (live).

Small enough to run under compute-sanitizer (memcheck) in seconds. Exit status 1 if any check fails.
"""
from __future__ import annotations

from . import bandwidth, launch, mode, occupancy_probe, waves

TOL = 1e-5


def run() -> dict:
    mode.require_live("the kernel self-test")
    res: dict[str, tuple[bool, str]] = {}
    sr = bandwidth.StreamRead(nbytes=1 << 24)
    for vec in (1, 4):
        for unroll in (1, 4):
            for grid, block in ((1, 128), (37, 256), (300, 1024)):
                e = sr.check_reference(grid, block, vec, unroll, n=1 << 18)
                res[f"stream_read<{vec},{unroll}> grid {grid} block {block}"] = (e < TOL, f"max rel err {e:.2e}")
    # a misaligned view is refused before launch, and the module still works afterwards
    try:
        sr.launch(4, 256, sr.x[1:1 + 4096], vec=4, unroll=4)
        res["misaligned float4 view refused"] = (False, "launched")
    except launch.LaunchError as e:
        res["misaligned float4 view refused"] = (True, str(e)[:60])
    e = sr.check_reference(8, 256, 4, 4, n=1 << 16)
    res["stream_read works after a refused launch"] = (e < TOL, f"max rel err {e:.2e}")
    for bad in ((0, 256), (4, 0), (4, 2048), (4, 100.5)):
        try:
            sr.launch(*bad)
            res[f"grid/block {bad} refused"] = (False, "launched")
        except launch.LaunchError:
            res[f"grid/block {bad} refused"] = (True, "LaunchError")
    del sr
    w = waves.Waves(max_grid=64)
    for k, e in w.check_references().items():
        # fixed_work chains 1000 float32 FMAs; against a float64 reference that is ~1000 roundings of
        # 2^-24 at most (6e-5): the bound is 1e-4 for it, TOL for the plain sums.
        tol = 1e-4 if k == "fixed_work" else TOL
        res[f"waves {k}"] = (e < tol, f"max rel err {e:.2e} (bound {tol:.0e})")
    for k, ok in occupancy_probe.check_probe_outputs(n=2048).items():
        res[f"{k} bytes == numpy"] = (ok, "byte-identical" if ok else "differs")
    from . import rmsnorm
    for n in (2048, 7168, 7166):
        c = rmsnorm.compare_rows(n, 48, keep=0)
        res[f"rms_norm n={n}: widened apply byte-identical"] = (c["wide_identical"], c["plans"]["wide"]["expr"])
        worst = max(c["max_rel_err_vs_float64"].values())
        res[f"rms_norm n={n}: every arm vs float64"] = (worst < TOL, f"max rel err {worst:.2e}")
        ok = c["emulation_ss_matches_gpu"]["narrow"] == 48 and c["emulation_ss_matches_gpu"]["wide"] == 48
        res[f"rms_norm n={n}: numpy emulation reproduces ss bits"] = (ok, str(c["emulation_ss_matches_gpu"]))
    for f in rmsnorm.fallback_checks(count=8):
        res[f"rms_norm fallback n={f['n']} offset {f['offset_floats']}"] = (f["identical"], f["expr"])
    from . import kda
    c = kda.compare(12, seed=3)
    for name, r in c["variants"].items():
        want_identical = r["mode"] != "fma"
        ok = r["identical_to_baseline"] == want_identical and r["rel_err_o"] < 1e-5 and r["rel_err_state"] < 1e-5
        res[f"kda {name}"] = (ok, f"identical={r['identical_to_baseline']} err o {r['rel_err_o']:.1e} "
                                  f"state {r['rel_err_state']:.1e}")
    for bad in (dict(bv=24), dict(bv=256), dict(mode_="x")):
        try:
            kda.plan(12, 128, **bad)
            res[f"kda refuses {bad}"] = (False, "accepted")
        except kda.KDAError as e:
            res[f"kda refuses {bad}"] = (True, str(e)[:50])
    for bad in (dict(eps=-1.0), dict(n=0)):
        try:
            rmsnorm.rms_norm(w.out[:16], w.out[:16], **bad)
            res[f"rms_norm refuses {bad}"] = (False, "launched")
        except rmsnorm.RMSNormError as e:
            res[f"rms_norm refuses {bad}"] = (True, str(e)[:50])
    return res


def main() -> int:
    res = run()
    width = max(len(k) for k in res)
    for k, (ok, msg) in sorted(res.items(), key=lambda kv: kv[1][0], reverse=True):   # failures last
        print(f"{'ok  ' if ok else 'FAIL'} {k:<{width}}  {msg}")
    bad = [k for k, (ok, _) in res.items() if not ok]
    print(f"{len(res) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0
