"""The recorder: measures everything the notebooks show, on a live GPU, into data/recordings/.

    python -m launchlab record                 # every recording
    python -m launchlab record section01       # one of them

Each recording carries its provenance and the sha256 of every kernel source it ran (launchlab.recordings).
Numbers are written exactly as measured; nothing here (or anywhere) edits a recorded number.
"""
from __future__ import annotations

import sys
import time

from . import (bandwidth, hardware, kernels, mode, occupancy_probe, provenance, recordings, timing, waves)
from .progress import Progress

SECTIONS = ("device", "occupancy", "section01", "section02", "section03")


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def record_device(out=None) -> dict:
    """GPU properties; the two timing instruments on a ~microsecond kernel; live vs offline registers."""
    import cupy as cp

    w = waves.Waves(max_grid=64)
    launch_one = lambda: w.launch_work(1, 1, 32, iters=64)       # noqa: E731 - a ~1-2 us kernel
    naive = timing.events(launch_one, reps=50, warmup=10, preroll_us=0,
                          label="events around one launch, GPU idle before it")
    ev = timing.events(launch_one, reps=50, warmup=10, label="events around one launch, behind a GPU spin")
    gr = timing.graph(launch_one, launches=327, reps=20, label="CUDA graph of 327 launches, per launch")
    cp.cuda.Device().synchronize()
    regs = {}
    for fam, exprs in kernels.FAMILIES.items():
        off = kernels.compile_offline(fam)
        for e in exprs:
            k = kernels.kernel(fam, e)
            row = {"live_registers": k.registers, "live_static_smem": k.smem_static,
                   "offline_nvrtc": ".".join(map(str, off.nvrtc_version))}
            try:
                r = off.resources_of(e)
                row.update(offline_registers=r.registers, offline_static_smem=r.smem_static)
            except kernels.KernelError as err:   # this machine's NVRTC gave no ptxas report: say so
                row.update(offline_registers=None, offline_static_smem=None, offline_error=str(err))
            regs[f"{fam}:{e}"] = row
    data = {"spec": hardware.from_device().to_dict(),
            "instruments": {"events_naive": naive.to_dict(), "events": ev.to_dict(), "graph": gr.to_dict(),
                            "kernel": "waves.cu fixed_work, grid 1, block 32, 64 FMA steps"},
            "registers": regs}
    return data


def record_occupancy() -> dict:
    rows, info = occupancy_probe.driver_table(progress=Progress("occupancy sweep"))
    bad = occupancy_probe.mismatches(rows, hardware.from_device())
    outputs = occupancy_probe.check_probe_outputs()
    _say(f"  occupancy: {len(rows)} driver answers, calculator disagrees on {len(bad)}; "
         f"probe outputs byte-identical to numpy: {all(outputs.values())}")
    return {"columns": list(occupancy_probe.COLUMNS), "rows": rows, "variants": info,
            "probe_outputs_match_reference": outputs}


def record_section01() -> dict:
    sr_sweep = bandwidth.measure(variants=((4, 4), (1, 1), (4, 1), (1, 4)), progress=Progress("stream sweep"))
    sr = bandwidth.StreamRead()
    refs = {f"{v}x{u}": sr.check_reference(g, b, v, u)
            for (v, u) in ((1, 1), (4, 1), (1, 4), (4, 4)) for (g, b) in ((1, 128), (37, 256))}
    del sr
    w = waves.Waves()
    stairs = [w.staircase(r, progress=Progress(f"waves r={r}")) for r in waves.RESIDENCIES]
    ramp = w.ramp()
    wrefs = w.check_references()
    return {"stream": sr_sweep.to_dict(), "stream_reference_max_rel_err": refs,
            "waves": {"staircases": [s.to_dict() for s in stairs], "ramp": ramp.to_dict(),
                      "iters": waves.ITERS, "reference_max_rel_err": wrefs}}


def record_section02() -> dict:
    from . import rmsnorm
    data = {"widths": list(rmsnorm.WIDTHS), "norms_per_token": rmsnorm.NORMS_PER_TOKEN, "eps": rmsnorm.EPS}
    prog = Progress("rms identity")
    data["identity"] = []
    for i, n in enumerate(rmsnorm.WIDTHS):
        data["identity"].append(rmsnorm.compare_rows(n, 10000))
        prog(i + 1, len(rmsnorm.WIDTHS))
    data["fallback"] = rmsnorm.fallback_checks()
    blocks = (128, 256, 512, 1024)
    timings = []
    prog = Progress("rms timing")
    for i, n in enumerate(rmsnorm.WIDTHS):
        b = rmsnorm.Bench(n)
        row = {"n": n, "original": b.time("original").to_dict(), "wide": b.time("wide").to_dict(),
               "wide_plan_block": rmsnorm.plan(n, b.x, b.w, b.y, wide=True, reduce="narrow").block,
               "wide_blocks": {str(k): b.time("wide", k).to_dict() for k in blocks}}
        try:
            row["cupy"] = b.time("cupy").to_dict()
            row["cupy_instrument"] = "graph"
        except Exception as e:  # noqa: BLE001 - fall back to events, and say so
            row["cupy"] = timing.events(lambda: b.run("cupy"), reps=50).to_dict()
            row["cupy_instrument"] = f"events (graph capture failed: {type(e).__name__})"
        timings.append(row)
        prog(i + 1, len(rmsnorm.WIDTHS))
    data["timing"] = timings
    b = rmsnorm.Bench(7168)
    data["abba_7168"] = timing.abba(lambda: b.time("original", reps=5), lambda: b.time("wide", reps=5), pairs=3,
                                    labels=("original 128 scalar", "widened apply")).to_dict()
    return data


def record_section03() -> dict:
    from . import kda
    data = {"K": kda.K, "V": kda.V, "bv_tiled": kda.BV_TILED}
    data["compare"] = kda.compare(12)
    data["compare_96"] = kda.compare(96, seed=1)
    sweep = []
    prog = Progress("kda sweep")
    jobs = [(tp, bv, m) for tp in (1, 2, 4, 8) for bv in (16, 32, 64, 128) for m in ("store", "rn")]
    benches = {}
    for i, (tp, bv, m) in enumerate(jobs):
        h = kda.HEADS_TP[tp]
        b = benches.get(h) or benches.setdefault(h, kda.Bench(h))
        p = kda.plan(h, kda.V, bv, m)
        sweep.append({"tp": tp, "n_head": h, "bv": bv, "mode": m, "grid": list(p.grid), "block": p.block,
                      "bytes": p.bytes_moved(), "timing": b.time(bv, m).to_dict()})
        prog(i + 1, len(jobs))
    data["sweep"] = sweep
    b = benches[12]
    # the §3.1 diagnostic: >= 10 reps of the starved baseline and of the tiled step, both in graphs
    data["diag"] = {"baseline": b.time(kda.V, "store", reps=30).to_dict(),
                    "tiled": b.time(kda.BV_TILED, "rn", reps=30).to_dict(),
                    "bytes_baseline": kda.bytes_moved(12, kda.V, "store"),
                    "bytes_tiled": kda.bytes_moved(12, kda.V, "rn")}
    data["abba"] = timing.abba(lambda: b.time(kda.V, "store", reps=5), lambda: b.time(kda.BV_TILED, "rn", reps=5),
                               pairs=3, labels=("baseline grid=n_head, store", "value-tiled BV=32, rn")).to_dict()
    data["contention"] = kda.contention(12)
    try:
        data["fla"] = kda.fla_peer(12)
        data["fla_96"] = kda.fla_peer(96)
    except Exception as e:  # noqa: BLE001 - the peer is optional on machines without torch/fla
        data["fla"] = {"error": f"{type(e).__name__}: {e}"}
    return data


FAMILIES_OF = {"device": list(kernels.FAMILIES), "occupancy": ["occupancy_probe"],
               "section01": ["stream_read", "waves", "spin"], "section02": ["rms_norm", "spin"],
               "section03": ["kda_decode", "stream_read", "spin"]}
RECORDERS = {"device": record_device, "occupancy": record_occupancy, "section01": record_section01,
             "section02": record_section02, "section03": record_section03}


def record(names=SECTIONS, data_dir=None) -> list[str]:
    mode.require_live("recording")
    written = []
    for name in names:
        if name not in RECORDERS:
            raise SystemExit(f"unknown recording {name!r}; known: {', '.join(SECTIONS)}")
        t0 = time.perf_counter()
        _say(f"recording {name} ...")
        data = RECORDERS[name]()
        p = recordings.save(name, data, FAMILIES_OF[name], provenance.collect(), data_dir)
        _say(f"  wrote {p} in {time.perf_counter() - t0:.1f} s")
        written.append(str(p))
    return written


def summary(data_dir=None) -> str:
    """A short table of the headline numbers of the recordings."""
    lines = []
    try:
        s = bandwidth.Sweep.from_dict(recordings.load("section01", data_dir).data["stream"], "")
        pk = s.peak()
        lines.append(f"copy ceiling (D2D, read+write)   {s.copy_tbs:6.3f} TB/s")
        lines.append(f"peak streaming read              {pk.tbs:6.3f} TB/s  = {pk.tbs / s.copy_tbs:.1%} of copy "
                     f"(block {pk.block}, grid {pk.grid})")
        for x in waves.Staircase.from_dict_list(recordings.load("section01", data_dir).data["waves"]):
            lines.append(f"wave r={x.residency}: predicted {x.blocks_per_wave:5d} blocks/wave, "
                         f"observed last one-wave grid {x.observed_wave()}, steps {x.steps()[:3]}")
    except recordings.RecordingError as e:
        lines.append(str(e))
    try:
        rows, _, _ = occupancy_probe.recorded_table()
        bad = occupancy_probe.mismatches(rows)
        lines.append(f"occupancy: {len(rows)} driver answers, calculator mismatches: {len(bad)}")
    except recordings.RecordingError as e:
        lines.append(str(e))
    return "\n".join(lines)
