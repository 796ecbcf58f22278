"""§1's self-test checks: the streaming read, the wave kernels, the block timelines and the occupancy probe against numpy."""
from __future__ import annotations

import functools

import numpy as np

from launchlab.core import launch, loader, timeline
from launchlab.core.checks import TOL, below, check
from launchlab.kernels import stream_read, waves

from launchlab.kernels import occupancy_probe


@functools.cache
def reader() -> "stream_read.StreamRead":
    return stream_read.StreamRead(nbytes=1 << 24)


@functools.cache
def wave_kernels() -> "waves.WaveKernels":
    return waves.WaveKernels(max_grid=64)


# ------------------------------------------------------------------ §1 streaming read
for _vec, _unroll in stream_read.VARIANTS:
    for _grid, _block in ((1, 128), (37, 256), (300, 1024)):
        check("01", f"stream_read<{_vec},{_unroll}>-grid{_grid}-block{_block}")(
            lambda v=_vec, u=_unroll, g=_grid, b=_block: below(reader().check_reference(g, b, v, u, n=1 << 18), TOL))


@check("01", "stream_read-misaligned-view-refused-then-works")
def _misaligned():
    sr = reader()
    try:
        sr.launch(4, 256, sr.x[1:1 + 4096], vec=4, unroll=4)
    except launch.LaunchError as e:
        msg = str(e)[:60]
    else:
        raise AssertionError("a misaligned float4 view launched")
    below(sr.check_reference(8, 256, 4, 4, n=1 << 16), TOL)
    return f"refused ({msg}...), then correct"


for _bad in ((0, 256), (4, 0), (4, 2048), (4, 100.5)):
    @check("01", f"stream_read-refuses-grid{_bad[0]}-block{_bad[1]}")
    def _refuse(bad=_bad):
        try:
            reader().launch(*bad)
        except launch.LaunchError as e:
            return f"LaunchError: {str(e)[:50]}"
        raise AssertionError(f"grid/block {bad} launched")


# ------------------------------------------------------------------ §1 waves and the occupancy probe
@check("01", "waves-fixed_work")
def _fixed_work():
    # 1000 chained float32 FMAs against a float64 reference: ~1000 roundings of 2^-24 at most (6e-5)
    return below(wave_kernels().check_references()["fixed_work"], 1e-4)


@check("01", "waves-fixed_bytes")
def _fixed_bytes():
    return below(wave_kernels().check_references()["fixed_bytes"], TOL)


@check("01", "timeline-stamped-stream_read-sums-like-numpy-and-stamps-every-block")
def _stamped_stream():
    import cupy as cp
    sr = reader()
    xs = sr.x[: 1 << 18]
    k = loader.kernel(stream_read.FAMILY, "stream_read_timeline<4, 4>")
    sr.partial[:37] = np.nan
    t = timeline.capture(stream_read.FAMILY, lambda: k.launch(37, 256, (xs, np.int64(xs.size // 4), sr.partial)), 37,
                         256, "check")
    got = cp.asnumpy(sr.partial[:37]).astype(np.float64)
    ref = stream_read.reference_partials(cp.asnumpy(xs), 37, 256, 4)
    below(float(np.max(np.abs(got - ref) / np.abs(ref))), TOL)
    assert t.sms_with_work == 37 and all(e >= s_ for s_, e in zip(t.start_ns, t.end_ns)), t.sm
    return f"37 blocks on {t.sms_with_work} SMs, span {t.span_ns} ns"


@check("01", "timeline-globaltimer-ticks")
def _ticks():
    r = timeline.resolution(64)
    assert r.min_ns > 0 and r.tick_ns < 2000, r.gaps_ns[:8]
    return f"median gap {r.tick_ns:.0f} ns, smallest {r.min_ns} ns"


@check("01", "occupancy_probe-every-variant-bytes-equal-numpy")
def _probe():
    res = occupancy_probe.check_probe_outputs(n=2048)
    bad = [k for k, ok in res.items() if not ok]
    assert not bad, f"differs from numpy: {bad}"
    return f"{len(res)} variants byte-identical"
