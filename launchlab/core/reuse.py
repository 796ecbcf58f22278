"""Reuse: a live measurement made by one notebook, read again by a later notebook of the same session.

Several notebooks show the same measurement: §1's streaming-read sweep comes back in §3, §3's KDA data in §5,
the block timelines (with their ncu run) in §1 and §3, the decode chain's PDL runs in §2 and §6. Each notebook
is its own process, so without this every one of them would measure again, and the whole course live would
spend minutes re-measuring what it measured a few minutes earlier on the same GPU.

When a door measures live (launchlab.core.door), its result is also written here (the door's own `dump`, the same
JSON a recording holds) with what it depends on: the GPU (host and PCI bus), the sha256 of the kernel sources
it ran and of the Python module that measured it, and every gate's value. A later `data()` on this machine
reads it back instead of measuring, and says so, only when all of those still match and it is younger than
LAUNCHLAB_LIVE_REUSE_S seconds (default 1800; 0 turns reuse off). `data(refresh=True)` always measures.

LAUNCHLAB_LIVE_DIR   where the measurements are kept (default ~/.cache/launchlab/live; one per learner on a hub)
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from launchlab.core import gates, paths, sources

FORMAT = 1
DEFAULT_MAX_AGE_S = 1800.0


class ReuseError(ValueError):
    pass


def live_dir() -> Path:
    return Path(os.environ.get("LAUNCHLAB_LIVE_DIR") or Path.home() / ".cache" / "launchlab" / "live")


def max_age_s() -> float:
    raw = os.environ.get("LAUNCHLAB_LIVE_REUSE_S", "").strip()
    if not raw:
        return DEFAULT_MAX_AGE_S
    try:
        v = float(raw)
    except ValueError:
        v = -1.0
    if not v >= 0:
        raise ReuseError(f"LAUNCHLAB_LIVE_REUSE_S={raw!r}: give seconds (a number >= 0; 0 turns reuse off)")
    return v


def _gpu() -> str:
    import cupy as cp
    d = cp.cuda.Device()
    return f"{socket.gethostname()} {d.pci_bus_id} {cp.cuda.runtime.getDeviceProperties(d.id)['name'].decode()}"


def _code_sha(door) -> str:
    try:
        src = inspect.getsourcefile(door.measure)
        return hashlib.sha256(Path(src).read_bytes()).hexdigest() if src else ""
    except (TypeError, OSError):
        return ""


def identity(door) -> dict:
    """What a stored measurement must still match to be reused."""
    sha: dict[str, str] = {}
    for fam in door.families:
        sha.update(sources.sha256s(fam))
    return {"format": FORMAT, "door": door.name, "gpu": _gpu(), "kernels": sha, "code": _code_sha(door),
            "gates": {g: gates.value(g) for g in sorted(gates.GATES)},
            "arguments": {k: repr(v) for k, v in sorted(door.live_arguments().items())}}


def path_of(door) -> Path:
    slug = "".join(c if c.isalnum() else "_" for c in door.name.lower()).strip("_")
    return live_dir() / f"{door.recording}.{slug[:60]}.json"


@dataclass
class Hit:
    data: dict            # the door's dump, as measured
    age_s: float
    pid: int

    @property
    def note(self) -> str:
        return (f"(reused: measured live on this GPU {self.age_s / 60:.1f} min ago by process {self.pid}, "
                f"same kernels, code and gates; .data(refresh=True) measures again, LAUNCHLAB_LIVE_REUSE_S=0 "
                f"turns reuse off)")


def load(door) -> Hit | None:
    """The stored measurement of `door`, if one exists that still matches and is young enough."""
    limit = max_age_s()
    if door.dump is None or limit == 0:
        return None
    p = path_of(door)
    try:
        doc = json.loads(p.read_text())
        if not isinstance(doc, dict) or doc.get("identity") != identity(door):
            return None
    except (OSError, ValueError, ImportError, RuntimeError):    # unreadable, or no GPU to compare with
        return None
    age = time.time() - float(doc.get("time", 0))
    if not 0 <= age <= limit:
        return None
    return Hit(doc["data"], age, int(doc.get("pid", 0)))


def save(door, result) -> Path | None:
    """Keep `door`'s live result for the notebooks after this one (nothing if the door has no dump, or the
    directory cannot be written: reuse is a saving, never a requirement)."""
    if door.dump is None or max_age_s() == 0:
        return None
    p = path_of(door)
    try:
        doc = {"identity": identity(door), "time": time.time(), "pid": os.getpid(), "data": door.dump(result)}
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, separators=(",", ":")))
        os.replace(tmp, p)
        return p
    except (OSError, ImportError, RuntimeError):
        return None


LOG = "measured.jsonl"


def log(door, seconds: float, reused: bool) -> None:
    """One line per live data() that measured or reused, in the session's folder: where a live course's time
    went, door by door (launchlab.faces.course reads it into data/course/live.json)."""
    try:
        d = live_dir()
        d.mkdir(parents=True, exist_ok=True)
        with open(d / LOG, "a") as f:
            f.write(json.dumps({"door": door.name, "recording": door.recording, "seconds": round(seconds, 2),
                                "reused": reused, "pid": os.getpid(), "time": round(time.time(), 1)}) + "\n")
    except OSError:
        pass


def logged(directory: Path | None = None) -> list[dict]:
    p = (directory or live_dir()) / LOG
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


COURSE_REPORT = paths.ROOT / "data" / "course" / "live.json"


def expected_seconds(door) -> float | None:
    """How long `door` took when the course last ran live on the H200 (data/course/live.json, measured, not
    reused): what its progress bar counts towards. None when it has no such record."""
    try:
        doc = json.loads(COURSE_REPORT.read_text())
        times = [float(d["seconds"]) for d in doc.get("doors", []) if d.get("door") == door.name and not d.get("reused")]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return max(times) if times else None
