"""§3/§5 on smaller GPUs (issue 29): main's KDA kernel and the fix, measured inside slices of N SMs.

Starvation is relative to the machine: main's 12 blocks fill 12 of the H200's 132 SMs (9 %), but three quarters
of a 16-SM slice. Inside each slice (launchlab.core.slices) this measures, at the lecture's 12 heads:

  the slice's copy ceiling   bytes / time of copies launched in the slice: cudaMemcpyAsync D2D on the slice's
                             stream (the course's copy ceiling; on the H200 a D2D copy runs on SMs, and inside a
                             slice on the slice's: it scales with N), an elementwise copy kernel, and the streaming
                             read at one full wave of the slice -- the floor of an N-SM slice is the step's bytes
                             over the faster of the two copies (`Ceiling.tbs`), not the whole GPU's
  main, the fix, tuned       each cold (a CUDA graph cycling through state copies larger than the L2) and hot
  the stamps                 main's and the fix's blocks, stamped (%smid) once launched directly and once replayed
                             from a CUDA graph on the slice's stream: the distinct SMs they ran on, proved <= N

The machine share of main's kernel is its distinct stamped SMs / N; its ratio is its cold time over the slice's
floor. Main's kernel is one block per head walking its columns serially, so its time need not move with N while
the floor does: the notebook says which way it fell.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from launchlab.core import diagnosis, hardware, loader, occupancy, recordings, slices, timeline, timing
from launchlab.core.door import Door
from launchlab.core.progress import Progress
from launchlab.core.recordings import RECORDED
from launchlab.kernels import kda_decode, stream_read
from launchlab.kernels.kda_decode import V
from launchlab.sections.s03_starvation import kda

SMS = (16, 32, 64, 128, 132)
N_HEAD = 12
ARMS = {"main": kda.LADDER[0], "fix": kda.LADDER[2], "tuned": kda.LADDER[3]}   # (body, BV, mode)
STAMPED = ("main", "fix")            # the arms with a stamped twin (kda_walk<MODE, true>)


@dataclass
class Stamped:
    """One stamped launch of an arm inside the slice: `how` is "launch" (directly on the slice's stream) or
    "graph" (replayed from a CUDA graph captured on a stream of the slice)."""
    arm: str
    how: str
    blocks: int
    distinct_sms: int


@dataclass
class Ceiling:
    """The slice's copies, each timed with CUDA events on the slice's stream (hot and cold do not apply to a
    buffer this size: 1 GiB is 17 L2s)."""
    copy_bytes: int
    memcpy: timing.Timing            # cudaMemcpyAsync D2D (bytes read + written)
    kernel_copy: timing.Timing       # an elementwise copy kernel (CuPy), a launch on the slice's SMs (read + written)
    read: timing.Timing              # the streaming read, one full wave of the slice (bytes read)
    read_grid: int

    @property
    def memcpy_tbs(self) -> float:
        return stream_read.tb_per_s(2 * self.copy_bytes, self.memcpy.median)

    @property
    def kernel_copy_tbs(self) -> float:
        return stream_read.tb_per_s(2 * self.copy_bytes, self.kernel_copy.median)

    @property
    def read_tbs(self) -> float:
        return stream_read.tb_per_s(self.copy_bytes, self.read.median)

    @property
    def tbs(self) -> float:
        """The slice's copy ceiling: the faster of its two copies."""
        return max(self.memcpy_tbs, self.kernel_copy_tbs)


@dataclass
class OnSlice:
    sms: int
    slice: str
    ceiling: Ceiling
    arms: dict[str, kda.Rung]        # "main", "fix", "tuned": each timed cold and hot (§3's Rung)
    stamps: list[Stamped]

    def arm(self, name: str) -> kda.Rung:
        if name not in self.arms:
            raise KeyError(f"no arm {name!r} on {self.sms} SMs; measured: {list(self.arms)}")
        return self.arms[name]

    def stamped(self, arm: str, how: str = "launch") -> Stamped:
        return next(s for s in self.stamps if (s.arm, s.how) == (arm, how))

    def respected(self) -> bool:
        return all(s.distinct_sms <= self.sms for s in self.stamps)

    def machine_share(self, arm: str = "main") -> float:
        """The share of the slice's SMs the arm's blocks ran on (its stamps)."""
        return self.stamped(arm).distinct_sms / self.sms

    def geometry(self, arm: str) -> diagnosis.Geometry:
        body, bv, mode_ = ARMS[arm]
        return kda_decode.geometry(N_HEAD, bv, mode_, body, spec(self.sms))

    def diagnose(self, arm: str, l2: str = "cold") -> diagnosis.Diagnosis:
        """§3.1's diagnostic on this slice: the arm's cold reps against bytes / the slice's copy ceiling."""
        a = self.arm(arm)
        t = a.cold if l2 == "cold" else a.hot
        return diagnosis.diagnose(a.bytes, t.reps_us, self.ceiling.tbs, geometry=self.geometry(arm))

    def ratio(self, arm: str = "main") -> float:
        return self.diagnose(arm).ratio


@dataclass
class SlicedStarvation:
    n_head: int
    slices: list[OnSlice]
    source: str = field(default="", metadata={RECORDED: False})

    def at(self, sms: int) -> OnSlice:
        for s in self.slices:
            if s.sms == sms:
                return s
        raise KeyError(f"nothing measured on {sms} SMs; measured: {[s.sms for s in self.slices]}")

    @property
    def sm_counts(self) -> list[int]:
        return [s.sms for s in self.slices]


def spec(sms: int) -> hardware.GPUSpec:
    """The H200 cut to `sms` SMs: what the calculator and the geometry read inside a slice of that size."""
    return hardware.sliced(hardware.H200, sms)


# ------------------------------------------------------------------ live
def _ceiling(sr: stream_read.StreamRead, n: int, reps: int) -> Ceiling:  # pragma: no mutate block (live only)
    import cupy as cp
    dst = cp.empty_like(sr.x)
    copy = cp.ElementwiseKernel("float32 x", "float32 y", "y = x", "launchlab_slice_copy")   # cp.copyto would be a
    kernel_copy = timing.events(lambda: copy(sr.x, dst), reps=reps, warmup=3, label="copy kernel")   # memcpy
    read_block = 256
    regs = loader.kernel(stream_read.FAMILY, stream_read.expr(*stream_read.variant())).registers
    grid = occupancy.occupancy(read_block, regs, 0, hardware.from_device()).blocks_per_wave
    read = sr.time(grid, read_block, reps)
    return Ceiling(sr.nbytes, sr.copy_ceiling(reps), kernel_copy, read, grid)


def _timed(b: kda_decode.Bench, arm: str, cold_reps: int, hot_reps: int) -> kda.Rung:  # pragma: no mutate block (live only)
    body, bv, mode_ = ARMS[arm]
    p = kda_decode.plan(N_HEAD, V, bv, mode_, body)
    return kda.Rung(body, bv, mode_, p.blocks, p.block, p.bytes_moved(), b.time_cold(bv, mode_, body, reps=cold_reps),
                    b.time(bv, mode_, body, reps=hot_reps))


def _stamp(b: kda_decode.Bench, arm: str, how: str, s: slices.SMSlice) -> Stamped:  # pragma: no mutate block (live only)
    body, bv, mode_ = ARMS[arm]
    p = kda_decode.plan(N_HEAD, V, bv, mode_, body)

    def once():
        kda_decode.step(b.q, b.k, b.vv, b.g, b.beta, b.state, b.o, b.scratch, bv, mode_, body, timeline=True)

    launch = once if how == "launch" else (lambda: timing.graph(once, launches=1, reps=1, warmup=1))
    t = timeline.capture(kda_decode.FAMILY, launch, p.blocks, p.block, f"{arm} on {s.n} SMs ({how})")
    return Stamped(arm, how, p.blocks, s.prove(t.sm))


def on_slice(b: kda_decode.Bench, sr: stream_read.StreamRead, n: int, reps: int) -> OnSlice:  # pragma: no mutate block (live only)
    with slices.SMSlice(n) as s:
        ceiling = _ceiling(sr, n, reps)
        arms = {name: _timed(b, name, reps, reps) for name in ARMS}
        stamps = [_stamp(b, arm, how, s) for arm in STAMPED for how in ("launch", "graph")]
        return OnSlice(s.n, s.describe(), ceiling, arms, stamps)


def measure(sms: tuple[int, ...] = SMS, reps: int = 30) -> SlicedStarvation:  # pragma: no mutate block (live only)
    b = kda_decode.Bench(N_HEAD, cold=True)
    sr = stream_read.StreamRead()
    for body, bv, mode_ in ARMS.values():            # load every arm outside the slices
        b.run(bv, mode_, body)
    prog = Progress("KDA on N SMs")
    out = []
    for i, n in enumerate(sms):
        out.append(on_slice(b, sr, n, reps))
        prog(i + 1, len(sms))
    return SlicedStarvation(N_HEAD, out, "live")


_parse, _dump = recordings.codec(SlicedStarvation, "kda", "slices")
DOOR: Door[SlicedStarvation] = Door("KDA main and fix on N SMs", "slices",
                                    (kda_decode.FAMILY, stream_read.FAMILY, "spin"), measure, _parse, _dump,
                                    quick={"reps": 10}, replayed_live=True)
data = DOOR.data
recorded = DOOR.recorded


def headline(d: SlicedStarvation) -> dict:
    out = {}
    for s in d.slices:
        out[f"kda_main_machine_share_{s.sms}sm"] = s.machine_share("main")
        out[f"kda_main_ratio_{s.sms}sm"] = s.ratio("main")
        out[f"kda_fix_ratio_{s.sms}sm"] = s.ratio("fix")
        out[f"kda_main_cold_us_{s.sms}sm"] = s.arm("main").cold.median
        out[f"kda_fix_cold_us_{s.sms}sm"] = s.arm("fix").cold.median
        out[f"copy_ceiling_tbs_{s.sms}sm"] = s.ceiling.tbs
    out["kda_slices_respected"] = all(s.respected() for s in d.slices)
    return out


_live: dict = {}


def point(sms: int, arm: str) -> tuple[OnSlice, str]:
    """One slice for the explorer, with `arm` in it: relaunched now inside a slice of `sms` SMs (the slice's
    copy ceiling measured once per N, the arm timed cold and stamped), or the recorded slice (replay)."""
    if arm not in ARMS:
        raise ValueError(f"no arm {arm!r}; the arms are {', '.join(ARMS)}")

    def now():  # pragma: no mutate block (live only)
        if "bench" not in _live:
            _live["bench"], _live["read"] = kda_decode.Bench(N_HEAD, cold=True), stream_read.StreamRead()
        b, sr = _live["bench"], _live["read"]
        with slices.SMSlice(sms) as s:
            ceiling = _live.get(("ceiling", sms)) or _live.setdefault(("ceiling", sms), _ceiling(sr, sms, 10))
            stamps = [_stamp(b, arm, "launch", s)] if arm in STAMPED else []
            return (OnSlice(s.n, s.describe(), ceiling, {arm: _timed(b, arm, 10, 5)}, stamps),
                    f"measured now on {s.n} SMs")
    return DOOR.choose(live=now, replay=lambda: (data().at(sms), f"recorded on {sms} SMs"))
