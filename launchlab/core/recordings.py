"""Recordings: measurements made on a real GPU by `python -m launchlab record`, replayed without one.

A recording is one JSON file in data/recordings/ with
    provenance   GPU, SM count, driver, CUDA runtime, CuPy version, date (launchlab.core.provenance)
    kernels      {file: sha256} of every kernel source (and header) it ran
    command      the command that re-records it
    data         every config and every rep the notebooks show

`load` refuses a recording that is missing, unreadable, or stale (a kernel source changed since it was
recorded), with a message naming the command that re-records it, so a notebook never draws a blank or an
out-of-date plot silently.

`encode` and `decode` map the sections' typed results (dataclasses) to the recording's JSON and back, field
by field, guided by the dataclasses' type hints. The recording format is the recorder's business; notebooks,
widgets and tests see only the typed results.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import types
import typing
from dataclasses import dataclass
from pathlib import Path

from launchlab.core import paths, sources

FORMAT = 1
DATA_DIR = Path(os.environ.get("LAUNCHLAB_DATA",
                               paths.ROOT / "data" / "recordings"))
REQUIRED = ("format", "name", "provenance", "kernels", "command", "data")
PROVENANCE_KEYS = ("gpu", "sm_count", "driver", "cuda_runtime", "cupy", "date")


class RecordingError(RuntimeError):
    pass


class StaleRecordingError(RecordingError):
    pass


def record_command(name: str) -> str:
    return f"python -m launchlab record {name}   (on a GPU machine; or: make record)"


@dataclass
class Recording:
    name: str
    provenance: dict
    kernel_sha: dict      # {file: sha256}
    command: str
    data: dict
    path: Path

    def stale_files(self) -> list[tuple[str, str, str | None]]:
        """[(file, recorded sha, current sha or None if the file is gone)] for every changed source."""
        out = []
        for fname, sha in self.kernel_sha.items():
            p = sources.KERNEL_DIR / fname
            now = hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
            if now != sha:
                out.append((fname, sha, now))
        return out

    def describe(self) -> str:
        p = self.provenance
        return (f"{self.name}: {p['gpu']} ({p['sm_count']} SMs), {p['date']}, driver {p['driver']}, "
                f"CUDA runtime {p['cuda_runtime']}, CuPy {p['cupy']}")


def path_of(name: str, data_dir: Path | None = None) -> Path:
    return Path(data_dir or DATA_DIR) / f"{name}.json"


def load(name: str, data_dir: Path | None = None, check_stale: bool = True) -> Recording:
    p = path_of(name, data_dir)
    if not p.exists():
        raise RecordingError(f"no recording '{name}' at {p}. Record it with: {record_command(name)}")
    try:
        d = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise RecordingError(f"recording {p} is unreadable ({e}). Re-record it with: "
                             f"{record_command(name)}") from e
    missing = [k for k in REQUIRED if k not in d] if isinstance(d, dict) else list(REQUIRED)
    if missing:
        raise RecordingError(f"recording {p} is corrupt: missing {', '.join(missing)}. Re-record it with: "
                             f"{record_command(name)}")
    if d["format"] != FORMAT:
        raise RecordingError(f"recording {p} has format {d['format']}, this launchlab reads {FORMAT}. "
                             f"Re-record it with: {record_command(name)}")
    lacking = [k for k in PROVENANCE_KEYS if k not in d["provenance"]]
    if lacking:
        raise RecordingError(f"recording {p} lacks provenance ({', '.join(lacking)}). Re-record it with: "
                             f"{record_command(name)}")
    r = Recording(d["name"], d["provenance"], d["kernels"], d["command"], d["data"], p)
    if check_stale:
        stale = r.stale_files()
        if stale:
            what = "; ".join(f"kernels/{f} recorded at sha256 {old[:12]}, now "
                             f"{(new[:12] if new else 'deleted')}" for f, old, new in stale)
            raise StaleRecordingError(f"recording '{name}' is stale: {what}. Its numbers no longer describe "
                                      f"these kernels. Re-record it with: {record_command(name)}")
    return r


def save(name: str, data: dict, families, provenance: dict, data_dir: Path | None = None) -> Path:
    sha: dict[str, str] = {}
    for fam in families:
        sha.update(sources.sha256s(fam))
    doc = {"format": FORMAT, "name": name, "provenance": provenance, "kernels": sha,
           "command": record_command(name), "data": data}
    p = path_of(name, data_dir)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".json.tmp")
    # Readable head (provenance, kernel hashes), compact data: recordings can hold tens of thousands of rows.
    head = {k: v for k, v in doc.items() if k != "data"}
    text = json.dumps(head, indent=1)[:-2] + ',\n "data": ' + json.dumps(data, separators=(",", ":")) + "\n}\n"
    json.loads(text)  # never write what cannot be read back
    tmp.write_text(text)
    os.replace(tmp, p)
    return p


def available(data_dir: Path | None = None) -> list[str]:
    return sorted(p.stem for p in Path(data_dir or DATA_DIR).glob("*.json"))


# ------------------------------------------------------------------ typed results <-> recording JSON
RECORDED = "recorded"   # dataclass field metadata key: False for fields that are not part of a recording


def encode(obj):
    """A typed result as plain JSON values: dataclasses become dicts of their recorded fields (a field whose
    value is None and whose default is None is left out), tuples become lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        for f in dataclasses.fields(obj):
            if not f.metadata.get(RECORDED, True):
                continue
            v = getattr(obj, f.name)
            if v is None and f.default is None:
                continue
            out[f.name] = encode(v)
        return out
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if isinstance(obj, (bool, int, float, str)) or obj is None:
        return obj
    if hasattr(obj, "item"):                    # numpy scalars
        return obj.item()
    raise TypeError(f"cannot record a {type(obj).__name__}")


def codec(cls, key: str, recording: str):
    """A door's (parse, dump) for a typed result kept whole under one key of its recording's data: parse
    decodes it (every recorded field required) and stamps the provenance line on `source`; dump encodes it."""
    def parse(d: dict, source: str):
        r = decode(cls, d[key], f"{recording}.{key}")
        r.source = source
        return r

    def dump(r) -> dict:
        return {key: encode(r)}
    return parse, dump


def decode(cls, value, where: str = "data"):
    """Build an instance of type `cls` (a dataclass, list[...], dict[...], tuple[...], X | None or a plain
    type) from recording JSON. Unknown keys are an error: the typed result must hold all that was recorded."""
    origin = typing.get_origin(cls)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(cls)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return decode(inner[0], value, where)
    if origin is list:
        (item,) = typing.get_args(cls) or (typing.Any,)
        return [decode(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        args = typing.get_args(cls)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v, where) for v in value)
        return tuple(decode(a, v, where) for a, v in zip(args, value))
    if origin is dict:
        kt, vt = typing.get_args(cls) or (str, typing.Any)
        return {decode(kt, k, where): decode(vt, v, f"{where}[{k!r}]") for k, v in value.items()}
    if dataclasses.is_dataclass(cls):
        if not isinstance(value, dict):
            raise RecordingError(f"{where}: expected an object for {cls.__name__}, got {type(value).__name__}")
        hints = typing.get_type_hints(cls)
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = set(value) - names
        if unknown:
            raise RecordingError(f"{where}: {cls.__name__} does not know {', '.join(sorted(unknown))}")
        kw = {k: decode(hints[k], v, f"{where}.{k}") for k, v in value.items()}
        try:
            return cls(**kw)
        except TypeError as e:
            raise RecordingError(f"{where}: cannot build {cls.__name__}: {e}") from e
    if cls is float:
        return float(value)
    if cls is int and isinstance(value, str):
        return int(value)
    return value
