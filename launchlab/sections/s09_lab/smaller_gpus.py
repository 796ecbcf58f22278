"""The lab on smaller GPUs (issue 29): the decode step under main, profiled inside slices of N SMs.

The audit's step 3 ranks launches by recoverable time, ms/token x (1 - wave fill), and both factors depend on
the machine: a launch's time moves with the SMs it can use, and its wave fill is blocks / (N x resident blocks
per SM). Inside each slice (launchlab.core.slices) the lab's step is profiled exactly as the lab's recording
profiles it on the whole H200 (stepprofile.profile: a graph with a timing event between launches, >= 10
replays, captured and replayed on the slice's own stream), so a learner can redo steps 1 to 3 for N SMs:
`profile(N)` is the step, `gpu(N)` the machine to hand to `lab.sms(...)` and `lab.resident(...)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from launchlab.core import gates, hardware, recordings, slices
from launchlab.core.door import Door
from launchlab.core.progress import Progress
from launchlab.core.recordings import RECORDED
from launchlab.kernels import decode
from launchlab.sections.s06_one_binary import stepprofile
from launchlab.sections.s09_lab.lab import CTX

SMS = (16, 32, 64, 128, 132)


@dataclass
class ProfileOn:
    sms: int
    slice: str
    profile: dict                    # stepprofile.Profile.to_dict(), under main, on `sms` SMs

    @property
    def step(self) -> "stepprofile.Profile":
        return stepprofile.Profile.from_dict(self.profile)


@dataclass
class LabOnSlices:
    ctx: int
    layers: int
    profiles: list[ProfileOn]
    source: str = field(default="", metadata={RECORDED: False})

    def at(self, sms: int) -> "stepprofile.Profile":
        for p in self.profiles:
            if p.sms == sms:
                return p.step
        raise KeyError(f"the step was not profiled on {sms} SMs; profiled: {self.sm_counts}")

    @property
    def sm_counts(self) -> list[int]:
        return [p.sms for p in self.profiles]


def measure(sms: tuple[int, ...] = SMS, ctx: int = CTX, layers: int = decode.FULL_LAYERS,
            reps: int = 10) -> LabOnSlices:  # pragma: no mutate block (live only)
    model = decode.build(decode.Config(layers=layers), ctx=ctx, extra=9)
    prog = Progress("the lab's step on N SMs")
    out = []
    with gates.setting(**gates.preset("main")):
        model.step(ctx)                                   # every kernel loaded outside the slices
        for i, n in enumerate(sms):
            with slices.SMSlice(n) as s:
                out.append(ProfileOn(s.n, s.describe(),
                                     stepprofile.profile(model, ctx, reps=reps, preset="main").to_dict()))
            prog(i + 1, len(sms))
    return LabOnSlices(ctx, layers, out, "live")


_parse, _dump = recordings.codec(LabOnSlices, "lab", "slices")
DOOR: Door[LabOnSlices] = Door("the lab's step on N SMs", "slices",
                               ("decode_ops", "rms_norm", "kda_decode", "mla_decode", "spin"), measure, _parse,
                               _dump, quick={"sms": (64, 132)}, replayed_live=True)
data = DOOR.data
recorded = DOOR.recorded


def profile(sms: int) -> "stepprofile.Profile":
    """The lab's step under main, profiled on `sms` SMs (replay: the H200 recording; live: measured on request,
    on 64 and 132 SMs in the course's quick run, on every N with LAUNCHLAB_LIVE_FULL=1)."""
    return data().at(sms)


def gpu(sms: int) -> hardware.GPUSpec:
    """The H200 cut to `sms` SMs: what lab.sms(...) and lab.resident(..., gpu) take for a slice of that size."""
    if sms not in SMS:
        raise ValueError(f"the lab's step was profiled on {', '.join(map(str, SMS))} SMs, not {sms}")
    return hardware.sliced("H200", sms)
