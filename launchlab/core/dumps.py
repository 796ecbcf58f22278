"""§7: proving bit-identity as bytes -- dumps of per-position arrays, and `cmp` over two of them.

A dump holds, for every decoded position, the same named arrays (the logits, and hidden states at chosen
layers), as raw bytes after a small header:

    8 bytes   magic b"LLDUMP\\x00\\x01"
    4 bytes   header length H (little-endian uint32)
    H bytes   header, JSON: {"arrays": [[name, dtype, [shape...]], ...], "meta": {...}}
    records   one per position: uint32 position (little-endian), then each array's bytes in header order

`cmp(a, b)` compares two dumps element by element *as bytes* (a tolerance says "acceptable"; only bytes say
"identical"): identical, or the first differing position, array and element, and how many differ. Metadata
(the gates, the build) may differ -- that is the point of comparing two arms -- but the arrays, their shapes
and the positions must match. `fingerprint` is the sha256 of the records alone.
"""
from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from launchlab.core.width import fit

MAGIC = b"LLDUMP\x00\x01"


class DumpError(ValueError):
    pass


@dataclass(frozen=True)
class ArraySpec:
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return np.dtype(self.dtype).itemsize * self.size


class Writer:
    """Write a dump record by record: `with Writer(path, {"logits": (shape, dtype)}, meta) as w: w.add(pos, ...)`."""

    def __init__(self, path, arrays: dict, meta: dict | None = None):
        if not arrays:
            raise DumpError("a dump needs at least one array")
        self.specs = [ArraySpec(str(k), np.dtype(dt).str, tuple(int(s) for s in shape))
                      for k, (shape, dt) in arrays.items()]
        header = json.dumps({"arrays": [[s.name, s.dtype, list(s.shape)] for s in self.specs],
                             "meta": meta or {}}, sort_keys=True).encode()
        self.path = Path(path)
        self._f = open(self.path, "wb")
        self._f.write(MAGIC + struct.pack("<I", len(header)) + header)
        self.records = 0

    def add(self, position: int, arrays: dict) -> None:
        if set(arrays) != {s.name for s in self.specs}:
            raise DumpError(f"record for position {position} has arrays {sorted(arrays)}, the dump holds "
                            f"{[s.name for s in self.specs]}")
        self._f.write(struct.pack("<I", int(position)))
        for s in self.specs:
            a = np.ascontiguousarray(arrays[s.name])
            if a.dtype.str != s.dtype or tuple(a.shape) != s.shape:
                raise DumpError(f"{s.name} at position {position}: {a.dtype} {a.shape}, the dump holds "
                                f"{np.dtype(s.dtype)} {s.shape}")
            self._f.write(a.tobytes())
        self.records += 1

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class Dump:
    path: Path
    specs: list[ArraySpec]
    meta: dict
    positions: np.ndarray
    data: bytes               # the records, exactly as written

    @property
    def record_bytes(self) -> int:
        return 4 + sum(s.nbytes for s in self.specs)

    def offsets(self) -> dict[str, tuple[int, ArraySpec]]:
        """{array name: (its byte offset inside a record, its spec)}, computed once per dump."""
        cached = self.__dict__.get("_offsets")
        if cached is None:
            cached, off = {}, 4
            for s in self.specs:
                cached[s.name] = (off, s)
                off += s.nbytes
            self.__dict__["_offsets"] = cached
        return cached

    def array(self, i: int, name: str) -> np.ndarray:
        """Record i's array `name` (a copy-free view of the bytes)."""
        found = self.offsets().get(name)
        if found is None:
            raise KeyError(f"no array {name!r} in {self.path.name}; it holds {[s.name for s in self.specs]}")
        off, s = found
        return np.frombuffer(self.data, dtype=s.dtype, count=s.size, offset=i * self.record_bytes + off).reshape(s.shape)

    def fingerprint(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def load(path) -> Dump:
    """Read a dump, or a clear error naming what is wrong with the file."""
    p = Path(path)
    if not p.is_file():
        raise DumpError(f"{p}: no such dump")
    raw = p.read_bytes()
    if len(raw) < 12 or raw[:8] != MAGIC:
        raise DumpError(f"{p.name}: not a launchlab dump (the first bytes are not {MAGIC!r})")
    (hlen,) = struct.unpack("<I", raw[8:12])
    if 12 + hlen > len(raw):
        raise DumpError(f"{p.name}: truncated inside its header ({len(raw)} bytes, the header ends at {12 + hlen})")
    try:
        h = json.loads(raw[12:12 + hlen])
        specs = [ArraySpec(n, str(np.dtype(dt).str), tuple(int(x) for x in shape)) for n, dt, shape in h["arrays"]]
    except (ValueError, KeyError, TypeError) as e:
        raise DumpError(f"{p.name}: unreadable header ({type(e).__name__}: {e})") from None
    data = raw[12 + hlen:]
    rec = 4 + sum(s.nbytes for s in specs)
    if len(data) % rec:
        raise DumpError(f"{p.name}: truncated -- {len(data) % rec} bytes after its last whole record "
                        f"({len(data) // rec} records of {rec} bytes); the writer stopped early")
    n = len(data) // rec
    positions = np.array([struct.unpack_from("<I", data, i * rec)[0] for i in range(n)], dtype=np.int64)
    return Dump(p, specs, dict(h.get("meta", {})), positions, data)


@dataclass(frozen=True)
class Comparison:
    identical: bool
    records: int
    elements: int                      # elements compared
    differing: int                     # elements whose bytes differ
    first: tuple[int, str, int] | None  # (position, array, flat element index) of the first difference
    first_values: tuple[float, float] | None
    per_array: dict                    # name -> differing elements
    fingerprints: tuple[str, str]

    def describe(self) -> str:
        if self.identical:
            return (f"IDENTICAL: {self.records} positions, {self.elements:,} elements, byte for byte "
                    f"(sha256 {self.fingerprints[0][:16]})")
        pos, name, idx = self.first
        a, b = self.first_values
        per = ", ".join(f"{k} {v:,}" for k, v in self.per_array.items() if v)
        return fit(f"DIFFER: first at position {pos}, {name}, element {idx} ({a!r} vs {b!r}); {self.differing:,} of "
                   f"{self.elements:,} elements differ ({per}); sha256 {self.fingerprints[0][:16]} vs "
                   f"{self.fingerprints[1][:16]}")


def cmp(a, b) -> Comparison:
    """Compare two dumps (paths or Dumps) byte for byte, position by position, array by array."""
    da = a if isinstance(a, Dump) else load(a)
    db = b if isinstance(b, Dump) else load(b)
    if da.specs != db.specs:
        raise DumpError(f"{da.path.name} and {db.path.name} hold different arrays: "
                        f"{[(s.name, s.dtype, s.shape) for s in da.specs]} vs "
                        f"{[(s.name, s.dtype, s.shape) for s in db.specs]}")
    if not np.array_equal(da.positions, db.positions):
        raise DumpError(f"{da.path.name} and {db.path.name} hold different positions "
                        f"({da.positions[:4].tolist()}... vs {db.positions[:4].tolist()}...)")
    per = {s.name: 0 for s in da.specs}
    first, first_vals, elements = None, None, 0
    if da.data == db.data:                              # the common case, settled by one memcmp
        elements = len(da.positions) * sum(s.size for s in da.specs)
        return Comparison(True, len(da.positions), elements, 0, None, None, per,
                          (da.fingerprint(), db.fingerprint()))
    for i in range(len(da.positions)):
        for s in da.specs:
            x, y = da.array(i, s.name).reshape(-1), db.array(i, s.name).reshape(-1)
            elements += x.size
            bits = np.dtype(f"u{x.dtype.itemsize}")
            ne = np.flatnonzero(x.view(bits) != y.view(bits))
            if ne.size:
                per[s.name] += int(ne.size)
                if first is None:
                    first = (int(da.positions[i]), s.name, int(ne[0]))
                    first_vals = (x[ne[0]].item(), y[ne[0]].item())
    differing = sum(per.values())
    return Comparison(differing == 0, len(da.positions), elements, differing, first, first_vals, per,
                      (da.fingerprint(), db.fingerprint()))
