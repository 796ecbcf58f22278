"""The line every notebook prints first: the mode, and the GPU measured now or the recordings replayed."""
from __future__ import annotations

from launchlab import sections
from launchlab.core import hardware, machine, mode, pdl, provenance, recordings, sharing, slices
from launchlab.core.width import fit


def banner(*recording_names: str) -> str:
    return mode.choose(live=lambda: _live(recording_names), replay=lambda: _replay(recording_names))


def _live(recording_names) -> str:
    p = provenance.collect()
    s = hardware.from_device()
    lines = [f"MODE: live -- measuring now on {s.name} ({s.sm_count} SMs, "
             f"sm_{s.compute_capability[0]}{s.compute_capability[1]})",
             f"      driver {p['driver']}, CUDA runtime {p['cuda_runtime']}, CuPy {p['cupy']}"]
    share = sharing.now()
    lines.append(f"      GPU sharing: {share.note() or 'a whole GPU, no other process on it (NVML)'}")
    if slices.green() is not None:
        lines.append(f"      SMs: {slices.active().describe()} -- every timing below says so beside it")
    other = machine.install([sec.figures for sec in sections.all() if sec.figures is not None])
    if other:
        lines.append(other)
        if not pdl.supported(s.compute_capability):
            lines.append("      " + pdl.note(s.compute_capability))
    if recording_names:
        lines.append("      recorded H200 numbers are shown beside live ones where a notebook compares them")
    return "\n".join(lines)


def _replay(recording_names) -> str:
    """The mode, then the recordings this notebook reads: grouped by the machine that made them (one line when,
    as usual, one H200 made them all), each with its date; loading each checks its kernels' sha256."""
    lines = [f"MODE: replay -- {mode.reason()}; every number below was measured on the GPU named here and recorded"]
    groups: dict[tuple, list[str]] = {}
    for name in recording_names:
        r = recordings.load(name)                   # refuses a recording whose kernel sources have changed
        p = r.provenance
        key = (p["gpu"], p["sm_count"], p["driver"], p["cuda_runtime"], p["cupy"])
        groups.setdefault(key, []).append((name, p["date"]))
    for (gpu, sms, driver, runtime, cupy), recs in groups.items():
        dates = sorted(d for _, d in recs)
        when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        lines.append(fit(f"      on {gpu} ({sms} SMs), driver {driver}, CUDA runtime {runtime}, CuPy {cupy}"))
        lines.append(fit(f"      {', '.join(n for n, _ in recs)}: recorded {when}; kernel sources unchanged since",
                         hang=8))
    return "\n".join(lines)
