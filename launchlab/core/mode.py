"""Live or replay: decided once per process.

live    CuPy imports and finds a CUDA GPU. Kernels compile (CuPy RawModule) and every figure is measured now.
replay  No usable GPU (a laptop, CI), or LAUNCHLAB_MODE=replay. Numbers come from recordings made on an
        H200 by the course's recorder; what needs no GPU (NVRTC compiles, occupancy arithmetic, numpy
        references) is still computed for real.

LAUNCHLAB_MODE=replay forces replay on a GPU machine; LAUNCHLAB_MODE=live insists on a GPU and fails
loudly without one. Anything else (or unset) means: live if a GPU is there.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

LIVE, REPLAY = "live", "replay"


@dataclass(frozen=True)
class Mode:
    name: str          # "live" or "replay"
    reason: str        # why this mode was chosen, in words

    @property
    def live(self) -> bool:
        return self.name == LIVE


class ModeError(RuntimeError):
    pass


def _probe_gpu() -> tuple[bool, str]:
    try:
        import cupy  # noqa: F401
    except Exception as e:  # ImportError, or a CuPy that cannot find its CUDA libraries
        return False, "no GPU stack on this machine (CuPy is not installed: expected on a laptop)"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return False, f"CuPy finds no CUDA driver or device ({type(e).__name__}: {e})"
    if n < 1:
        return False, "CuPy finds no CUDA device"
    return True, f"CuPy {cupy.__version__} finds {n} CUDA device(s)"


@lru_cache(maxsize=1)
def current() -> Mode:
    """The mode of this process (cached: decided once)."""
    want = os.environ.get("LAUNCHLAB_MODE", "").strip().lower()
    if want == REPLAY:
        return Mode(REPLAY, "LAUNCHLAB_MODE=replay")
    ok, why = _probe_gpu()
    if want == LIVE and not ok:
        raise ModeError(f"LAUNCHLAB_MODE=live but {why}")
    if want not in ("", LIVE, REPLAY, "auto"):
        raise ModeError(f"LAUNCHLAB_MODE={want!r}: use 'live', 'replay' or leave it unset")
    return Mode(LIVE if ok else REPLAY, why)


def is_live() -> bool:
    return current().live


def choose(live, replay):
    """The one live/replay branch for code that has no door (a door has its own `choose`): `live()` runs on
    the GPU now, `replay()` answers without one. Nothing outside `mode` and `door` asks which mode it is."""
    return live() if is_live() else replay()


def reason() -> str:
    """Why this process is in its mode, in words (what the banner prints)."""
    return current().reason


def describe() -> str:
    """The mode and why, in words: 'replay (LAUNCHLAB_MODE=replay)'."""
    return f"{current().name} ({current().reason})"


def require_live(what: str) -> None:
    """Raise a clear error when `what` needs a GPU and this process is in replay mode."""
    if not is_live():
        raise ModeError(f"{what} needs a CUDA GPU (live mode); this process is in replay mode: "
                        f"{current().reason}")

