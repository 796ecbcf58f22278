"""Bad inputs across the public API: each refused before any launch with an error that names the fix, and the
session still working after it (the reliability sweep, issue 14).

Each case is a call a learner could plausibly make -- a block of 0 or 2,048 threads, a float64 row, a strided or
misaligned view, a NumPy array handed to a live launcher, a gate set to a value it does not have, a corrupt or
stale recording, a truncated dump given to `cmp` -- with the course's error type it must raise, a pattern that
must appear in the message (the fix, said in words: "float32", "cupy.asarray", "Re-record it with", ...) and a
follow-up: the same API called correctly right after, which must still work. On a GPU the follow-up of every
case that reached a launcher is a real launch whose bytes are checked against numpy, so "the notebook's kernel
keeps working" means the CUDA context survived.

    python -m launchlab badinputs            # every case this machine can run: a table, and exit 1 on a failure

Cases marked `gpu` need live mode (they hand arrays to a launcher); in replay they are listed, not run. The
recorded table (`record badinputs` on a GPU) holds every case; docs/bad_inputs.md is written from it.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from launchlab import sections
from launchlab.core import dumps, gates, hardware, launch, loader, mode, occupancy, paths, pdl, recordings, slices
from launchlab.core.badinput import Case
from launchlab.kernels import decode, kda_decode, mla, rms_norm, splits


@dataclass
class Result:
    area: str
    bad: str
    error: str                                 # the exception's type
    message: str                               # its first line
    raised_right: bool                         # the course's error type, before any launch
    fix_named: bool
    session_ok: bool
    gpu: bool
    ran: bool = True

    @property
    def ok(self) -> bool:
        return self.raised_right and self.fix_named and self.session_ok


# ------------------------------------------------------------------ follow-ups: the same API, correctly
def _x(n=7168, rows=1, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(n * rows).astype(dtype)


def _check_ok():
    return launch.check(132, 256, 0).grid == (132, 1, 1)


def _validate_ok():
    x = _x()
    return rms_norm.validate(x, np.ones(7168, np.float32), np.empty_like(x), 7168, 1e-6) == 1


def _gpu_norm_ok():
    """A real launch right after the refused one, its output against the float64 reference: the CUDA context
    survived."""
    import cupy as cp
    x, w = _x(seed=1), rms_norm.weight(7168)
    y, _ = rms_norm.rms_norm(cp.asarray(x), cp.asarray(w), None, rms_norm.EPS, 7168)
    return bool(np.allclose(cp.asnumpy(y), rms_norm.reference(x.reshape(1, -1), w).ravel(), rtol=1e-5))


def _gate_ok():
    with gates.setting(RMS_WIDE="1"):
        return gates.value("RMS_WIDE") == "1"


# ------------------------------------------------------------------ recordings and dumps made bad on purpose
_tmp = Path(tempfile.gettempdir()) / f"launchlab-badinputs-{os.getpid()}"


def _corrupt_recording():
    _tmp.mkdir(exist_ok=True)
    (_tmp / "section02.json").write_text('{"format": 1, "name": "section02", "provenance": ')   # cut short
    return recordings.load("section02", _tmp)


def _stale_recording():
    _tmp.mkdir(exist_ok=True)
    d = json.loads(recordings.path_of("section02").read_text())
    d["kernels"] = {k: "0" * 64 for k in d["kernels"]}                                       # other sources
    (_tmp / "section02.json").write_text(json.dumps(d))
    return recordings.load("section02", _tmp)


def _missing_recording():
    _tmp.mkdir(exist_ok=True)
    return recordings.load("section05", _tmp)


def _recording_ok():
    return recordings.load("section02").name == "section02"


def _dump(path: Path, n: int = 3, positions=(0, 1)):
    with dumps.Writer(path, {"logits": ((n,), np.float32)}, {"ctx": 0}) as w:
        for p in positions:
            w.add(p, {"logits": np.arange(n, dtype=np.float32) + p})
    return path


def _truncated_dump():
    _tmp.mkdir(exist_ok=True)
    p = _dump(_tmp / "a.dump")
    raw = p.read_bytes()
    (_tmp / "cut.dump").write_bytes(raw[:-5])
    return dumps.cmp(dumps.load(p), dumps.load(_tmp / "cut.dump"))


def _not_a_dump():
    _tmp.mkdir(exist_ok=True)
    (_tmp / "notes.txt").write_text("hello")
    return dumps.load(_tmp / "notes.txt")


def _mismatched_dumps():
    _tmp.mkdir(exist_ok=True)
    return dumps.cmp(dumps.load(_dump(_tmp / "a.dump", 3)), dumps.load(_dump(_tmp / "b.dump", 4)))


def _dump_ok():
    _tmp.mkdir(exist_ok=True)
    return dumps.cmp(dumps.load(_dump(_tmp / "a.dump")), dumps.load(_dump(_tmp / "c.dump"))).identical


def _env_gate(value: str):
    old = os.environ.get("LAUNCHLAB_KDA_VT")
    os.environ["LAUNCHLAB_KDA_VT"] = value
    try:
        return kda_decode.plan(12, 128)
    finally:
        if old is None:
            os.environ.pop("LAUNCHLAB_KDA_VT", None)
        else:
            os.environ["LAUNCHLAB_KDA_VT"] = old


# ------------------------------------------------------------------ launchers on a GPU, handed bad arrays
def _gpu_numpy_to_norm():
    x = _x()
    return rms_norm.rms_norm(x, np.ones(7168, np.float32), np.empty_like(x), rms_norm.EPS, 7168)


def _gpu_strided_norm():
    import cupy as cp
    x = cp.asarray(_x(n=7168, rows=2))
    return rms_norm.rms_norm(x[::2], cp.ones(7168, dtype=cp.float32), cp.empty(7168, dtype=cp.float32))


def _gpu_misaligned_kda():
    import cupy as cp
    h = kda_decode.inputs(12, 128, 0)
    arrays = {k: cp.asarray(v) for k, v in h.items()}
    buf = cp.zeros(12 * 128 + 1, dtype=cp.float32)
    q = buf[1:].reshape(12, 128)                              # 4 bytes past a 16-byte boundary
    return kda_decode.step(q, arrays["k"], arrays["v"], arrays["g"], arrays["beta"], arrays["state"],
                    cp.empty(12 * 128, dtype=cp.float32).reshape(12, 128), cp.empty_like(arrays["state"]))


def _gpu_numpy_to_mla():
    q = np.zeros((1, 16, mla.D), np.uint16)
    return mla.Decoder(q, np.zeros((1, 64, mla.D), np.uint16), mla.D ** -0.5)


def _gpu_shared_memory_over():
    import cupy as cp
    k = loader.kernel("rms_norm", "rms_norm_wide<true>")
    x = cp.zeros(7168, dtype=cp.float32)
    return k.launch(1, 1024, (x, x, x, np.int32(7168), np.float32(1e-6), np.uint64(0), np.uint64(0)), smem=240_000)


def _gpu_grid_zero():
    import cupy as cp
    x = cp.zeros(7168, dtype=cp.float32)
    return loader.kernel("rms_norm", "rms_norm_f32").launch(0, 128, (x, x, x, np.int32(7168), np.float32(1e-6),
                                                                      np.uint64(0), np.uint64(0)))


def _gpu_step_out_of_cache():
    m = decode.build(decode.Config(layers=1), ctx=8, extra=1)
    return m.step(1000)


def _gpu_slice_of_12():
    with slices.SMSlice(12):
        pass


def _gpu_slice_ok() -> bool:
    with slices.SMSlice(16) as s:
        return slices.active() is s and hardware.from_device().sm_count == 16


# ------------------------------------------------------------------ the cases
E = launch.LaunchError
_COURSE: list[Case] = [
    Case("launch", "a block of 0 threads", lambda: launch.check(1, 0), E, r"at least one thread", _check_ok),
    Case("launch", "a block of 2,048 threads", lambda: launch.check(1, 2048), E, r"limit of 1024", _check_ok),
    Case("launch", "a grid of 0 blocks", lambda: launch.check(0, 128), E, r"at least one block", _check_ok),
    Case("launch", "a grid of 1.5 blocks", lambda: launch.check(1.5, 128), E, r"whole number", _check_ok),
    Case("launch", "a 4-dimensional grid", lambda: launch.check((1, 1, 1, 1), 128), E, r"1 to 3 dimensions",
         _check_ok),
    Case("launch", "300 KB of dynamic shared memory", lambda: launch.check(1, 128, 300_000), E,
         r"shared memory", _check_ok),
    Case("launch", "negative shared memory", lambda: launch.check(1, 128, -1), E, r"cannot be negative",
         _check_ok),
    Case("launch", "1,024 threads at 128 registers each", lambda: launch.check(1, 1024, regs=128), E,
         r"registers", _check_ok),
    Case("occupancy", "a register count given as text", lambda: occupancy.occupancy(256, "32", 0), TypeError,
         r"must be an integer", lambda: occupancy.occupancy(256, 32, 0).blocks_per_sm > 0),
    Case("RMS norm", "a float64 row", lambda: rms_norm.validate(_x(dtype=np.float64), np.ones(7168, np.float32),
                                                                np.empty(7168, np.float32), 7168, 1e-6),
         rms_norm.RMSNormError, r"must be float32", _validate_ok),
    Case("RMS norm", "a strided view x[::2]", lambda: rms_norm.validate(_x(rows=2)[::2], np.ones(7168, np.float32),
                                                                       np.empty(7168, np.float32), 7168, 1e-6),
         rms_norm.RMSNormError, r"contiguous.*ascontiguousarray", _validate_ok),
    Case("RMS norm", "7,000 elements for rows of 7,168", lambda: rms_norm.validate(
        _x(n=7000), np.ones(7168, np.float32), np.empty(7000, np.float32), 7168, 1e-6),
         rms_norm.RMSNormError, r"not a whole number of rows of 7168", _validate_ok),
    Case("RMS norm", "a row width of 0", lambda: rms_norm.plan(0), rms_norm.RMSNormError, r"positive integer",
         lambda: rms_norm.plan(7168).block == 1024),
    Case("RMS norm", "a negative eps", lambda: rms_norm.validate(_x(), np.ones(7168, np.float32),
                                                                 np.empty(7168, np.float32), 7168, -1.0),
         rms_norm.RMSNormError, r"eps must be a finite number >= 0", _validate_ok),
    Case("RMS norm", "a block of 100 threads for the widened kernel", lambda: rms_norm.plan(7168, block=100),
         rms_norm.RMSNormError, r"128 to 1024 threads in whole warps", lambda: rms_norm.plan(7168, block=512).block == 512),
    Case("KDA", "a value tile of 48 for V = 128", lambda: kda_decode.plan(12, 128, 48), kda_decode.KDAError, r"must divide V",
         lambda: kda_decode.plan(12, 128, 32).grid == (4, 12)),
    Case("KDA", "a value tile of 0", lambda: kda_decode.plan(12, 128, 0), kda_decode.KDAError, r"positive multiple of 4",
         lambda: kda_decode.plan(12, 128, 32).grid == (4, 12)),
    Case("KDA", "0 heads", lambda: kda_decode.plan(0, 128), kda_decode.KDAError, r"n_head must be a positive integer",
         lambda: kda_decode.plan(12, 128, 32).grid == (4, 12)),
    Case("MLA", "5,000 splits of a 131,072-token context", lambda: splits.forced(131_072, splits=5000),
         splits.SplitError, r"cap of 1024.*use a slice of at least", lambda: splits.forced(131_072, splits=256).splits == 256),
    Case("MLA", "a pipeline that does not exist", lambda: mla.plan(1, 16, 131_072, pipeline="fast"), mla.MLAError,
         r"must be one of off, cp\.async", lambda: mla.plan(1, 16, 131_072).grid[0] > 1),
    Case("gates", "LAUNCHLAB_KDA_VT=2", lambda: _env_gate("2"), gates.GateError, r"is not one of 0, 1",
         lambda: _env_gate("1").grid == (4, 12)),
    Case("gates", "a gate name that does not exist", lambda: gates.setting(RMS_WIDTH="1").__enter__(),
         gates.GateError, r"the gates are .*RMS_WIDE", _gate_ok),
    Case("gates", "a preset that does not exist", lambda: gates.preset("fast"), gates.GateError,
         r"one of main, fixed", _gate_ok),
    Case("recordings", "a recording cut short (invalid JSON)", _corrupt_recording, recordings.RecordingError,
         r"unreadable.*Re-record it with: python -m launchlab record section02", _recording_ok),
    Case("recordings", "a recording of other kernel sources (stale)", _stale_recording,
         recordings.StaleRecordingError, r"stale.*Re-record it with", _recording_ok),
    Case("recordings", "a recording that is not there", _missing_recording, recordings.RecordingError,
         r"Record it with: python -m launchlab record section05", _recording_ok),
    Case("dumps", "a truncated dump given to cmp", _truncated_dump, dumps.DumpError, r"truncated", _dump_ok),
    Case("dumps", "a text file given as a dump", _not_a_dump, dumps.DumpError, r"not a launchlab dump", _dump_ok),
    Case("dumps", "two dumps of different arrays", _mismatched_dumps, dumps.DumpError, r"hold different arrays",
         _dump_ok),
    Case("decode", "a model of 0 layers", lambda: decode.Config(layers=0), decode.DecodeError, r"positive integer",
         lambda: decode.Config(layers=4).norms_per_token == 15),
    Case("launch path", "a Python int as a kernel argument", lambda: pdl.marshal((7168,)), pdl.PDLError,
         r"NumPy scalars \(np\.int32", lambda: pdl.marshal((np.int32(7168),))[1] == 1 and pdl.words(1) == [7168]),
    Case("slices", "a slice of 0 SMs", lambda: slices.check(0), slices.SliceError,
         r"at least 8 SMs.*8, 16, 24, \.\.\., 128, or 132", lambda: slices.check(16) == 16),
    Case("slices", "a slice of 12 SMs (not a multiple of 8)", lambda: slices.check(12), slices.SliceError,
         r"silently round 12 up to 16.*8, 16, 24, \.\.\., 128, or 132", lambda: slices.check(16) == 16),
    Case("slices", "a slice of 136 SMs on a 132-SM GPU", lambda: slices.check(136), slices.SliceError,
         r"the GPU has 132 SMs.*or 132 \(the whole GPU\)", lambda: slices.check(128) == 128),
    # on a GPU: arrays handed to the launchers
    Case("RMS norm", "NumPy arrays handed to the live launcher", _gpu_numpy_to_norm, E, r"cupy\.asarray",
         _gpu_norm_ok, gpu=True),
    Case("RMS norm", "a strided CuPy view to the live launcher", _gpu_strided_norm, rms_norm.RMSNormError,
         r"ascontiguousarray", _gpu_norm_ok, gpu=True),
    Case("KDA", "a query 4 bytes off a 16-byte boundary", _gpu_misaligned_kda, kda_decode.KDAError, r"16-byte aligned",
         _gpu_norm_ok, gpu=True),
    Case("MLA", "NumPy arrays handed to the decoder", _gpu_numpy_to_mla, mla.MLAError, r"cupy\.asarray",
         _gpu_norm_ok, gpu=True),
    Case("launch", "240,000 B of shared memory at launch", _gpu_shared_memory_over, E, r"shared memory",
         _gpu_norm_ok, gpu=True),
    Case("launch", "a grid of 0 at launch", _gpu_grid_zero, E, r"at least one block", _gpu_norm_ok, gpu=True),
    Case("decode", "a position past the model's cache", _gpu_step_out_of_cache, decode.DecodeError,
         r"outside the cache \(capacity", _gpu_norm_ok, gpu=True),
    Case("slices", "a green context of 12 SMs asked of the driver", _gpu_slice_of_12, slices.SliceError,
         r"round 12 up to 16", _gpu_slice_ok, gpu=True),
]


# every bad input: the course's own (above) and every registered section's (its manifest's `bad_inputs`)
CASES: list[Case] = _COURSE + [c for sec in sections.all() for c in sec.bad_inputs]


def run(cases: list[Case] | None = None) -> list[Result]:
    """Every case this machine can run; a GPU case in replay is listed as not run."""
    out = []
    for c in cases or CASES:
        if c.gpu:
            out.append(mode.choose(live=lambda c=c: _run(c), replay=lambda c=c: Result(
                c.area, c.bad, c.error.__name__, "", False, False, False, True, ran=False)))
        else:
            out.append(_run(c))
    return out


def _run(c: Case) -> Result:
    err, msg = "nothing raised", ""
    try:
        c.call()
    except Exception as e:                                 # which one, and what it says, is the point
        err, msg = type(e).__name__, str(e)
        right = isinstance(e, c.error)
    else:
        right = False
    try:
        ok = bool(c.then())
    except Exception as e:
        ok, msg = False, msg + f" | then: {type(e).__name__}: {e}"
    return Result(c.area, c.bad, err, msg.splitlines()[0] if msg else "", right,
                  bool(re.search(c.fix, msg, re.S)), ok, c.gpu)


def table(results: list[Result]) -> str:
    rows = ["| area | bad input | error | what it says (first line) | fix named | session works after |",
            "|---|---|---|---|---|---|"]
    for r in results:
        if not r.ran:
            rows.append(f"| {r.area} | {r.bad} | (GPU only: not run here) | | | |")
            continue
        rows.append(f"| {r.area} | {r.bad} | `{r.error}` | {r.message.replace('|', '/')} | "
                    f"{'yes' if r.fix_named else 'NO'} | {'yes' if r.session_ok else 'NO'} |")
    return "\n".join(rows)


DOCS = paths.ROOT / "docs" / "bad_inputs.md"
REPORT = paths.ROOT / "data" / "reliability" / "bad_inputs.json"


def docs(results: list[Result], where: str) -> str:
    ran = [r for r in results if r.ran]
    return "\n".join([
        "# Bad inputs",
        "",
        "Every call below is refused before anything reaches the GPU, with an error that names the fix, and the",
        "same API called correctly right after still works (on a GPU: a real launch whose output is checked, so",
        "the notebook's CUDA context survived). Written by `python -m launchlab badinputs --docs` "
        f"({where}); `tests/test_badinputs.py` runs the same cases in every `make test`.",
        "",
        f"{len(results)} cases; {len(ran)} run here, {sum(r.ok for r in ran)} refused with the fix named and the session "
        "working after." + ("" if len(ran) == len(results) else
                              f" The {len(results) - len(ran)} GPU cases need live mode and are run on the H200."),
        "",
        table(results),
        ""])


def main(argv: list[str] | None = None) -> int:
    import datetime as dt
    res = run()
    if argv and "--docs" in argv:
        on = mode.choose(live=lambda: f"live on the {hardware.from_device().name}", replay=lambda: "replay mode, no GPU")
        where = f"{on}, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC"
        DOCS.parent.mkdir(exist_ok=True)
        DOCS.write_text(docs(res, where))
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(json.dumps({"where": where, "cases": len(res), "ran": sum(r.ran for r in res),
                                      "rejected": sum(r.ok for r in res if r.ran),
                                      "results": [asdict(r) for r in res]}, indent=1) + "\n")
        print(f"wrote {DOCS} and {REPORT}")
    print(table(res))
    ran = [r for r in res if r.ran]
    bad = [r for r in ran if not r.ok]
    print(f"\n{len(ran)} bad inputs run ({len(res) - len(ran)} left for a GPU): {len(ran) - len(bad)} refused with the fix "
          f"named and the session working after; {len(bad)} not")
    return 1 if bad else 0
