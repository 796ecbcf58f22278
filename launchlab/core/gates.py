"""Runtime gates: one build, two (or more) arms.

Every variant of a kernel is compiled into the same module; which one a launch uses is read from a
LAUNCHLAB_* environment variable at launch time. So "before" and "after" are the same binary with a flag
flipped, and an A/B needs no rebuild (lecture §6). `restore_set()` prints the assignment that returns every
gate to its baseline (the unoptimized arm), like PR #127's restore set.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

PREFIX = "LAUNCHLAB_"


class GateError(ValueError):
    pass


@dataclass(frozen=True)
class Gate:
    name: str                  # without the prefix, e.g. "STREAM_VEC"
    choices: tuple[str, ...]   # legal values
    default: str               # what a launch uses when the variable is unset
    baseline: str              # the unoptimized arm: what the restore set sets
    doc: str
    kernel: str                # the kernel family it selects a variant of

    @property
    def env(self) -> str:
        return PREFIX + self.name


GATES: dict[str, Gate] = {}
_valid: dict[tuple[str, str], str] = {}          # (variable, raw value) -> its checked value (see value())


def register(gate: Gate) -> Gate:
    if gate.default not in gate.choices or gate.baseline not in gate.choices:
        raise GateError(f"{gate.env}: default and baseline must be among {gate.choices}")
    GATES[gate.name] = gate
    _valid.clear()
    return gate


# Inside steady() (one decode step: ~3,900 asks), each gate is read from the environment once; None outside.
_steady: dict[str, str] | None = None


def value(name: str) -> str:
    """The gate's value now (read from the environment at every call, i.e. at launch time; inside steady(),
    once per block)."""
    held = _steady
    if held is not None:
        v = held.get(name)
        if v is not None:
            return v
    g = GATES[name]
    raw = os.environ.get(g.env)
    if raw is None or raw == "":
        v = g.default
    else:
        v = _valid.get((g.env, raw))         # each setting is checked once
        if v is None:
            v = raw.strip()
            if v not in g.choices:
                raise GateError(f"{g.env}={raw.strip()!r} is not one of {', '.join(g.choices)} ({g.doc})")
            _valid[(g.env, raw)] = v
    if held is not None:
        held[name] = v
    return v


@contextlib.contextmanager
def steady():
    """A block in which the gates do not change (one decode step): each is read from the environment once,
    at its first ask, and remembered until the block ends. setting() inside it forgets what was read.
    Nested blocks are one block."""
    global _steady
    if _steady is not None:
        yield
        return
    _steady = {}
    try:
        yield
    finally:
        _steady = None


def restore_set() -> str:
    """Environment assignments that return every gate to its baseline arm."""
    return " ".join(f"{g.env}={g.baseline}" for g in sorted(GATES.values(), key=lambda g: g.name))


def table(prefix: str = "") -> str:
    """Every gate (or those whose name starts with `prefix`, e.g. "STREAM_"): value now, default, baseline."""
    import textwrap
    rows = [f"{'gate':<28} {'now':>7} {'default':>8} {'baseline':>9}  what it selects"]
    pad = " " * 57
    for g in sorted((g for g in GATES.values() if g.name.startswith(prefix)), key=lambda g: g.name):
        doc = textwrap.wrap(g.doc, 52) or [""]          # the table stays 110 columns wide: no line wraps mid-word
        rows.append(f"{g.env:<28} {value(g.name):>7} {g.default:>8} {g.baseline:>9}  {doc[0]}")
        rows += [pad + line for line in doc[1:]]
    return "\n".join(rows)


@contextlib.contextmanager
def setting(**values: str):
    """Set gates for the duration of a block: `with gates.setting(STREAM_VEC="1"): ...`."""
    old = {}
    try:
        for name, v in values.items():
            if name not in GATES:
                raise GateError(f"no gate {name!r}: the gates are {', '.join(sorted(GATES))} (give the name without "
                                f"the {PREFIX} prefix)")
            g = GATES[name]
            if str(v) not in g.choices:
                raise GateError(f"{g.env}={v!r} is not one of {', '.join(g.choices)}")
            old[g.env] = os.environ.get(g.env)
            os.environ[g.env] = str(v)
        if _steady is not None:
            _steady.clear()
        yield
    finally:
        for env, v in old.items():
            if v is None:
                os.environ.pop(env, None)
            else:
                os.environ[env] = v
        if _steady is not None:
            _steady.clear()


PRESETS = ("main", "fixed")


def preset(name: str) -> dict[str, str]:
    """`main`: every gate at its baseline -- main's flaws restored (the restore set); `fixed`: every gate at
    its default, the fixed arms. {gate name: value}, for `setting(**preset(name))`."""
    if name not in PRESETS:
        raise GateError(f"preset must be one of {', '.join(PRESETS)}, got {name!r}")
    return {g.name: (g.baseline if name == "main" else g.default) for g in GATES.values()}


# ------------------------------------------------------------------ the course's gates
register(Gate("STREAM_VEC", ("1", "4"), default="4", baseline="1", kernel="stream_read",
              doc="§1 streaming read: floats per load (1 scalar, 4 float4)"))
register(Gate("STREAM_UNROLL", ("1", "4"), default="4", baseline="1", kernel="stream_read",
              doc="§1 streaming read: independent loads in flight per thread"))
register(Gate("TIMELINE", ("0", "1"), default="0", baseline="0", kernel="stream_read",
              doc="§1/§3 block timelines: 1 launches the stamped twins (stream_read, fixed_work, kda), which write "
                  "each block's SM and start/end into the buffer timeline.capture() arms"))
register(Gate("RMS_WIDE", ("0", "1"), default="1", baseline="0", kernel="rms_norm",
              doc="§2 RMS norm: 1 widens the apply (block sized to the width, float4 where legal)"))
register(Gate("RMS_REDUCE", ("narrow", "wide"), default="narrow", baseline="narrow", kernel="rms_norm",
              doc="§2 RMS norm: 'wide' lets every thread add to ss (reassociates; not bit-identical)"))
register(Gate("RMS_UNROLL", ("auto", "1"), default="auto", baseline="auto", kernel="rms_norm",
              doc="§2 RMS norm: 1 = #pragma unroll 1 on the narrow loops (one load of x in flight per thread)"))
register(Gate("MLA_FLOOR", ("derived", "hardcoded"), default="derived", baseline="hardcoded", kernel="mla_decode",
              doc="§4 MLA decode: the slice derived from the shape and kMlaBlocksPerSm = 2, or main's flat 1024 tokens"))
register(Gate("MLA_PIPELINE", ("off", "cp.async", "cp.async-3"), default="off", baseline="off", kernel="mla_decode",
              doc="§4 MLA decode: off = a block loads a 64-token tile, then computes on it; cp.async = 32-token "
                  "tiles double-buffered, the next tile in flight while this one is computed; cp.async-3 = three "
                  "stages, two tiles in flight (one block per SM)"))
register(Gate("MLA_SKIP", ("off", "on"), default="off", baseline="off", kernel="mla_decode",
              doc="§8 MLA combine: on drops splits whose combine weight is below 1e-5, only past 16,384 tokens"))
register(Gate("KDA_BODY", ("walk", "tuned"), default="tuned", baseline="walk", kernel="kda_decode",
              doc="§3 KDA decode: walk = main's 128-thread kernel, a warp walks its columns one by one; tuned = "
                  "a warp issues 4 columns' loads at once, block sized to the tile"))
register(Gate("KDA_VT", ("0", "1"), default="1", baseline="0", kernel="kda_decode",
              doc="§3 KDA decode: 1 value-tiles the grid (BV = 32, grid = V/32 x n_head); 0: grid = n_head"))
register(Gate("KDA_ELIDE", ("store", "rn", "fma"), default="rn", baseline="store", kernel="kda_decode",
              doc="§3 KDA decode: recompute S*exp(g) in pass 2 (rn: __fmul_rn, fma: contractible) or store it"))
register(Gate("PDL", ("0", "1"), default="1", baseline="1", kernel="decode_ops",
              doc="decode chain: 1 = every kernel of the chain launched with programmatic dependent launch "
                  "(cuLaunchKernelEx + griddepcontrol, launchlab.core.pdl); 0 = the same launches without the attribute"))
register(Gate("PDL_OPT_OUT", ("none", "rms_norm", "decode_ops", "kda_decode", "mla_decode"), default="none",
              baseline="none", kernel="rms_norm",
              doc="decode chain: one kernel family launched without the PDL attribute inside a PDL chain (the "
                  "lecture's optimization that opts out of the launch path)"))
register(Gate("LAB_ADD", ("0", "1"), default="0", baseline="0", kernel="residual_add",
              doc="the lab's steps 6-7: 1 launches the decode step's residual adds with the plan the learner "
                  "registered (launchlab.sections.s09_lab.fix.use); 0 = main's add_inplace"))
