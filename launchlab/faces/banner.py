"""The line every notebook prints first: the mode, and the GPU measured now or the recordings replayed."""
from __future__ import annotations

from launchlab.core import hardware, mode, provenance, recordings, sharing
from launchlab.faces import recorder


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
    if recording_names:
        lines.append("      recorded H200 numbers are shown beside live ones where a notebook compares them")
    return "\n".join(lines)


def _replay(recording_names) -> str:
    lines = [f"MODE: replay -- {mode.reason()}; figures come from H200 recordings"]
    for name in recording_names:
        r = recordings.load(name)
        p = r.provenance
        held = ", ".join(d.name for d in recorder.RECORDINGS[name])
        lines.append(f"      {name} ({held}): {p['gpu']} ({p['sm_count']} SMs), recorded {p['date']}, driver "
                     f"{p['driver']}, CUDA runtime {p['cuda_runtime']}, CuPy {p['cupy']}, "
                     f"kernels {', '.join(sorted(r.kernel_sha))} (sha256 current)")
    return "\n".join(lines)
