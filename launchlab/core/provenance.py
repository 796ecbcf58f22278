"""Provenance of a measurement: which GPU, driver, CUDA runtime and CuPy produced it, and when."""
from __future__ import annotations

import datetime as _dt
import platform
import shutil
import subprocess

import numpy

from launchlab.core import hardware


def _driver_string() -> str:
    """The driver's version ("580.159.04"): from NVML in this process (what the GPU-sharing note already asks), else
    nvidia-smi (a process of its own: ~0.3 s, paid by every live notebook's first cell), else the CUDA driver API's."""
    try:
        from cuda.bindings import nvml
        nvml.init_v2()
        try:
            v = nvml.system_get_driver_version()
        finally:
            nvml.shutdown()
        v = v.decode() if isinstance(v, bytes) else str(v)
        if v.strip():
            return v.strip()
    except Exception:  # noqa: BLE001 - any NVML failure: ask nvidia-smi
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            r = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 0 and r.stdout.strip():
                return r.stdout.strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
    import cupy
    v = cupy.cuda.runtime.driverGetVersion()
    return f"CUDA {v // 1000}.{v % 1000 // 10} driver API"


def _version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def collect() -> dict:
    """Provenance of the live GPU (live mode only)."""
    import cupy

    s = hardware.from_device()
    return {
        "gpu": s.name,
        "sm_count": s.sm_count,
        "compute_capability": f"{s.compute_capability[0]}.{s.compute_capability[1]}",
        "driver": _driver_string(),
        "driver_cuda": _version(cupy.cuda.runtime.driverGetVersion()),
        "cuda_runtime": _version(cupy.cuda.runtime.runtimeGetVersion()),
        "nvrtc": ".".join(str(x) for x in cupy.cuda.nvrtc.getVersion()),
        "cupy": cupy.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "spec": s.to_dict(),
    }
