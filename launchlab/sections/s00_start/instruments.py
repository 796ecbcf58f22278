"""Notebook 00: the GPU's properties, and the two timing instruments read on a microsecond kernel.

    events   CUDA events around one launch: with the GPU idle before it (the naive reading, which holds the
             host's launch gap) and queued behind a GPU spin (the kernel's own time)
    graph    the same launch 327 times in one CUDA graph, per launch: the instrument for microsecond kernels

The kernel is waves.cu's fixed_work at grid 1, block 32, 64 dependent FMA steps: a ~1 us job. Beside the
readings the recording keeps every kernel's registers and static shared memory as the driver loaded them,
and as the offline NVRTC compile reports them, so replay can show that the two agree.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from launchlab.core import compiler, hardware, loader, recordings, sources, timing
from launchlab.core.door import Door
from launchlab.core.recordings import RECORDED
from launchlab.core.timing import Timing
from launchlab.kernels import waves

KERNEL = "waves.cu fixed_work, grid 1, block 32, 64 FMA steps"


@dataclass
class Instruments:
    """One ~1 us launch read three ways: what a launch costs by itself, per instrument."""
    events_naive: Timing
    events: Timing
    graph: Timing
    kernel: str

    @property
    def launch_graph_us(self) -> float:
        """The fixed cost of one launch replayed in a CUDA graph (median)."""
        return self.graph.median

    @property
    def launch_events_us(self) -> float:
        """The fixed cost of one launch timed alone with events behind a spin (median)."""
        return self.events.median


@dataclass
class RegisterRow:
    live_registers: int
    live_static_smem: int
    offline_nvrtc: str
    offline_registers: int | None          # None when that machine's NVRTC gave no ptxas report
    offline_static_smem: int | None
    offline_error: str | None = None


@dataclass
class DeviceData:
    spec: hardware.GPUSpec
    instruments: Instruments
    registers: dict[str, RegisterRow]
    source: str = field(default="", metadata={RECORDED: False})

    def readings(self) -> dict[str, Timing]:
        """The three readings of one ~1 us launch, by the instrument that took them."""
        i = self.instruments
        return {"events, GPU idle before": i.events_naive, "events, behind a GPU spin": i.events,
                "CUDA graph of 327, per launch": i.graph}


def measure_instruments() -> Instruments:
    """The three readings of one ~1 us launch, now (a second or two)."""
    w = waves.WaveKernels(max_grid=64)
    launch_one = lambda: w.launch_work(1, 1, 32, iters=64)       # noqa: E731 - a ~1-2 us kernel
    naive = timing.events(launch_one, reps=50, warmup=10, preroll_us=0,
                          label="events around one launch, GPU idle before it")
    ev = timing.events(launch_one, reps=50, warmup=10, label="events around one launch, behind a GPU spin")
    gr = timing.graph(launch_one, launches=327, reps=20, label="CUDA graph of 327 launches, per launch")
    return Instruments(naive, ev, gr, KERNEL)


def measure() -> DeviceData:
    """The GPU's properties, the instruments, and every kernel's registers as loaded and as compiled offline
    (every family compiled twice, side by side: 5.6 s with this door on the H200 from a cold kernel cache)."""
    import cupy as cp

    ins = measure_instruments()
    cp.cuda.Device().synchronize()
    loader.load_all()
    regs = {}
    for fam, exprs in sources.FAMILIES.items():
        off = compiler.compile_offline(fam)
        for e in exprs:
            k = loader.kernel(fam, e)
            row = RegisterRow(k.registers, k.smem_static, ".".join(map(str, off.nvrtc_version)), None, None)
            try:
                r = off.resources_of(e)
                row.offline_registers, row.offline_static_smem = r.registers, r.smem_static
            except sources.KernelError as err:   # this machine's NVRTC gave no ptxas report: say so
                row.offline_error = str(err)
            regs[f"{fam}:{e}"] = row
    return DeviceData(hardware.from_device(), ins, regs, "live")


def _parse(d: dict, source: str) -> DeviceData:
    r = recordings.decode(DeviceData, d)
    r.source = source
    return r


DOOR: Door[DeviceData] = Door("GPU properties and timing instruments", "device", tuple(sources.FAMILIES),
                              measure, _parse, recordings.encode)
data = DOOR.data
recorded = DOOR.recorded

LAUNCH_COSTS: Door[Instruments] = Door("launch costs", "device", ("waves", "spin"), measure_instruments,
                                       lambda d, src: recordings.decode(Instruments, d["instruments"]))


def launch_costs() -> Instruments:
    """What one launch costs per instrument (live: measured now, in a second or two; replay: the device
    recording's), for other sections' floors: a µs kernel cannot beat the cost of being launched."""
    return LAUNCH_COSTS.data()


def headline(d: DeviceData) -> dict:
    return {"sm_count": d.spec.sm_count,
            "launch_graph_us": d.instruments.launch_graph_us,
            "launch_events_us": d.instruments.launch_events_us,
            "launch_events_naive_us": d.instruments.events_naive.median}
