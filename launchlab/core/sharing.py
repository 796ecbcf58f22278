"""Who else is on this GPU: a timing on a shared GPU is a lie waiting to happen.

On a class's JupyterHub a learner's GPU may be a MIG slice (isolated, but a fraction of the H200's SMs and
bandwidth) or a time-sliced share (all SMs, other learners' kernels interleaved with yours). The live path asks
NVML (NVIDIA's management library, through cuda-bindings' `nvml` module) about the GPU CuPy is using, matched
by PCI bus id: is MIG enabled on it, and which compute processes hold a context on it besides this one.
`note()` is what gets printed beside every timing the course measures (timing.Timing.shared, the banner): empty
when the GPU is whole and this process is alone on it -- the recordings' case -- and a warning otherwise.

In a container NVML reports host process ids, which need not include ours; then every process but one (ours,
which holds a context whenever it measures) counts as another.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from launchlab.core import mode, slices

_TTL_S = 2.0


@dataclass(frozen=True)
class Sharing:
    gpu: str
    mig: bool                 # MIG is enabled on the physical GPU, so this device is one slice of it
    sms: int                  # what CUDA reports for this device
    memory_gib: float
    others: int               # compute processes on the GPU besides this one
    others_gib: float         # their device memory
    error: str = ""           # NVML could not answer (then nothing is claimed either way)

    @property
    def alone(self) -> bool:
        return not self.error and not self.mig and self.others == 0

    def note(self) -> str:
        """'' when the GPU is whole and ours alone; otherwise what to say beside a timing."""
        if self.error:
            return f"GPU sharing unknown ({self.error})"
        parts = []
        if self.mig:
            parts.append(f"on a MIG slice of the {self.gpu} ({self.sms} SMs, {self.memory_gib:.0f} GiB): steady, "
                         f"but not a whole GPU's timings")
        if self.others:
            parts.append(f"shared GPU: {self.others} other process{'es' if self.others > 1 else ''} "
                         f"({self.others_gib:.1f} GiB) -- timings unreliable")
        return "; ".join(parts)


def others(pids: list[int], own: int) -> int:
    """Compute processes that are not this one. NVML lists host pids: if ours is not among them (a container's
    pid namespace), every process but one is counted as another."""
    if own in pids:
        return sum(p != own for p in pids)
    return max(0, len(pids) - 1)


def _processes(info) -> tuple[list[int], list[int]]:
    """(pids, bytes used) from what cuda-bindings' nvml returns for the running processes: a struct array whose
    fields are arrays, or a sequence of structs."""
    if info is None:
        return [], []
    pid = getattr(info, "pid", None)
    if pid is not None and hasattr(pid, "__len__"):
        used = getattr(info, "used_gpu_memory", [0] * len(pid))
        return [int(x) for x in pid], [int(x or 0) for x in used]
    items = list(info) if hasattr(info, "__len__") else [info]
    return [int(x.pid) for x in items], [int(x.used_gpu_memory or 0) for x in items]


_cache: tuple[float, Sharing] | None = None


def now(refresh: bool = False) -> Sharing:
    """The current device's sharing (live mode), cached for two seconds."""
    global _cache
    mode.require_live("asking NVML about the GPU")
    if _cache and not refresh and time.monotonic() - _cache[0] < _TTL_S:
        return _cache[1]
    import cupy as cp
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    sms, mem = int(props["multiProcessorCount"]), props["totalGlobalMem"] / 2 ** 30
    try:
        from cuda.bindings import nvml
        nvml.init_v2()
        try:
            h = nvml.device_get_handle_by_pci_bus_id_v2(dev.pci_bus_id)
            try:
                mig = int(nvml.device_get_mig_mode(h)[0]) == 1
            except Exception:                        # GPUs without MIG answer "not supported"
                mig = False
            pids, used = _processes(nvml.device_get_compute_running_processes_v3(h))
            own = os.getpid()
            n = others(pids, own)
            theirs = [u for p, u in zip(pids, used) if p != own] if own in pids else used[1:]
            s = Sharing(name, mig, sms, mem, n, sum(theirs) / 2 ** 30)
        finally:
            nvml.shutdown()
    except Exception as e:                           # no NVML in this container, a driver without it, ...
        s = Sharing(name, False, sms, mem, 0, 0.0, f"{type(e).__name__}: {e}"[:120])
    _cache = (time.monotonic(), s)
    return s


def note() -> str:
    """What to print beside a timing measured now: '' in replay (the recording carries its own) or when alone
    on the whole GPU; inside a slice of N SMs (launchlab.core.slices) it says so."""
    def live():
        return "; ".join(x for x in (slices.note(), now().note()) if x)
    return mode.choose(live=live, replay=lambda: "")
