"""The audit's step 4 for the top offenders: what each launch moves, measured by Nsight Compute, its floor against
the course's measured copy ceiling, its cold time and robust spread over >= 10 calls, and the course's verdict.

    ncu --profile-from-start off --clock-control none --cache-control all --csv --page raw \
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,launch__occupancy_limit_* \
        --kernel-name regex:... python my_step.py

- Only the offenders are profiled: ncu's kernel filter names their functions, and its rows are matched back to the
  audit's shapes by (function, grid, block) -- a looser filter costs time, never a wrong row.
- Only the program's marked steps: `audit.step()` brackets each step with cudaProfilerStart/Stop when
  LAUNCHLAB_AUDIT_NCU=1 (set here for the child), so warm-up, model build and prefill are not profiled.
- Bytes per call are DRAM bytes read + written (ncu's counters: what reached memory, not what the kernel asked
  for), their median over the calls; the time is `gpu__time_duration` of each call with every cache flushed before
  it (--cache-control all: a cold-L2 time) at the clocks the GPU runs (--clock-control none). ncu serialises the
  kernels, so its spread shows the kernel's own repeatability, never contention from a neighbour.
- The floor is bytes / the course's copy ceiling + the launch's fixed cost; the verdict is
  launchlab.core.diagnosis's, unchanged, with the geometry (blocks, SMs, resident blocks from the calculator).
- Where ncu is missing, refused (no access to the performance counters) or measured fewer than 10 calls of a shape,
  that shape gets no floor and the reason, never a guessed one.
"""
from __future__ import annotations

import csv
import math
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from launchlab.audit.launches import AuditError
from launchlab.audit.shapes import Shape, ranking
from launchlab.core import diagnosis, mode, timing, width
from launchlab.kernels import stream_read, waves

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum")
OCC_LIMITS = ("launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
              "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps")
NCU_FLAGS = ("--profile-from-start", "off", "--clock-control", "none", "--cache-control", "all", "--csv",
             "--page", "raw", "--metrics", ",".join(METRICS + OCC_LIMITS))
MIN_CALLS = 10
ENV = "LAUNCHLAB_AUDIT_NCU"          # set for the program ncu runs: audit.step() brackets each step for ncu
_TIME = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}
_BYTES = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def duration(us: float) -> str:
    """A time as step 4 prints it: ns below a microsecond (a floor that is mostly one launch), else µs."""
    return f"{us * 1e3:.0f} ns" if us < 1 else f"{us:.2f} µs"


def function(name: str) -> str:
    """A kernel's function name: no return type, namespaces, template arguments or parameters
    ("void at::native::reduce_kernel<512, 1, ...>(...)" -> "reduce_kernel")."""
    depth, out = 0, []
    for ch in name.replace("(anonymous namespace)", "anonymous"):
        if ch in "<(":
            if depth == 0 and ch == "(" and out:
                break
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    s = "".join(out).strip()
    s = s.split()[-1] if s else name
    return s.rsplit("::", 1)[-1]


def kernel_filter(rows: list[Shape]) -> str:
    """ncu's --kernel-name for these shapes: their function names, whatever of namespace or template ncu's name
    base keeps around them."""
    names = sorted({function(r.kernel) for r in rows})
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)]
    if bad or not names:
        raise AuditError(f"cannot name these kernels to ncu: {bad or 'none given'}")
    return "regex:(^|::| )(" + "|".join(names) + ")($|[<(])"


@dataclass(frozen=True)
class Reference:
    """What a floor is measured against, on this GPU now: the copy ceiling (bytes read + written ÷ a
    device-to-device copy's median) and the fixed cost of one launch (a ~1 µs kernel replayed in a CUDA graph)."""
    copy_tbs: float
    launch_us: float


def reference(reps: int = 10) -> Reference:  # pragma: no mutate block (live only)
    """The copy ceiling and the launch cost, measured now (a second or two; the course's §1 and §0 instruments)."""
    mode.require_live("measuring the copy ceiling for step 4")
    sr = stream_read.StreamRead()
    copy = sr.copy_ceiling(reps=reps)
    w = waves.WaveKernels(max_grid=64)
    g = timing.graph(lambda: w.launch_work(1, 1, 32, iters=64), launches=327, reps=reps,
                     label="CUDA graph of 327 launches, per launch")
    return Reference(2 * sr.nbytes / (copy.median * 1e-6) / 1e12, g.median)


def command(argv: list[str], rows: list[Shape], log: str | Path, ncu: str = "ncu") -> list[str]:
    return [ncu, *NCU_FLAGS, "--kernel-name", kernel_filter(rows), "--log-file", str(log), *argv]


@dataclass(frozen=True)
class Call:
    """One profiled launch, as ncu measured it."""
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    bytes_read: float
    bytes_written: float
    cold_us: float
    resident: int | None          # ncu's occupancy limits: the smallest (None where it gave none)

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written


_APP_FAILED = re.compile(r"The application returned an error code \((-?\d+)\)")


def refusal(text: str) -> str | None:
    """ncu's own error line, where it refused or failed (==ERROR== ...), else None. The program's own failure
    (ncu's "The application returned an error code (N)") is not ncu's refusal: see program_failed."""
    for line in text.splitlines():
        if line.startswith("==ERROR==") and not _APP_FAILED.search(line):
            return line[len("==ERROR=="):].strip()
    return None


def program_failed(text: str, returncode: int) -> int | None:
    """The program's exit status where it failed under ncu (ncu's own line, or its exit status), else None."""
    m = _APP_FAILED.search(text)
    if m:
        return int(m.group(1))
    return returncode or None


def _number(s: str) -> float:
    return float(s.replace(",", ""))


def _dims(s: str) -> tuple[int, int, int]:
    parts = [int(x) for x in s.strip("() ").split(",")]
    return tuple((parts + [1, 1, 1])[:3])


def parse(text: str) -> list[Call]:
    """ncu's CSV raw page (as --log-file writes it, its ==PROF== lines included) -> one Call per profiled launch."""
    why = refusal(text)
    if why is not None:
        raise AuditError(f"ncu refused: {why}")
    status = program_failed(text, 0)
    if status is not None:
        raise AuditError(f"the program under ncu exited with status {status}: its calls are not a whole run")
    rows = list(csv.reader([ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]))
    if len(rows) < 2:
        return []
    head, units = rows[0], rows[1]
    need = ("Kernel Name", "Grid Size", "Block Size") + METRICS
    missing = [c for c in need if c not in head]
    if missing:
        raise AuditError(f"ncu's CSV lacks {', '.join(missing)}: not a raw page with the audit's metrics")
    col = {c: head.index(c) for c in head}
    t_scale = _TIME.get(units[col["gpu__time_duration.sum"]])
    b_scale = [_BYTES.get(units[col[m]]) for m in METRICS[:2]]
    if t_scale is None or None in b_scale:
        raise AuditError(f"ncu's units not understood: {units[col['gpu__time_duration.sum']]!r}, "
                         f"{[units[col[m]] for m in METRICS[:2]]}")
    out = []
    for r in rows[2:]:
        if len(r) != len(head):
            continue
        limits = [_number(r[col[c]]) for c in OCC_LIMITS if c in col and r[col[c]].strip()]
        out.append(Call(r[col["Kernel Name"]], _dims(r[col["Grid Size"]]), _dims(r[col["Block Size"]]),
                        _number(r[col[METRICS[0]]]) * b_scale[0], _number(r[col[METRICS[1]]]) * b_scale[1],
                        _number(r[col[METRICS[2]]]) * t_scale, int(min(limits)) if limits else None))
    return out


@dataclass
class Floor:
    """Step 4 for one launch shape: its bytes, floor, cold time and verdict -- or why there is no floor."""
    shape: Shape
    calls: int                                 # ncu's calls of this shape
    bytes_per_call: float | None
    cold_us: list[float] = field(default_factory=list)   # every call's cold time
    floor_us: float | None = None
    ncu_resident: int | None = None
    verdict: str = "no floor"
    evidence: list[str] = field(default_factory=list)

    @property
    def has_floor(self) -> bool:
        return self.floor_us is not None

    @property
    def median_us(self) -> float | None:
        return statistics.median(self.cold_us) if self.cold_us else None

    @property
    def spread(self) -> float | None:
        return diagnosis.robust_spread(self.cold_us) if len(self.cold_us) >= 4 else None

    @property
    def ratio(self) -> float | None:
        return self.median_us / self.floor_us if self.has_floor else None

    def line(self, indent: str = "") -> str:
        """The offender's step 4 on lines of at most width.WIDTH characters (after `indent`), the evidence hung
        under the kernel."""
        g, b = "x".join(map(str, self.shape.grid)), "x".join(map(str, self.shape.block))
        head = f"{function(self.shape.kernel)} grid {g} block {b}"
        if not self.has_floor:
            return width.fit(f"{indent}{head}: no floor -- {'; '.join(self.evidence)}", hang=len(indent) + 4)
        return width.fit(f"{indent}{head}: {self.verdict.upper()} -- {self.bytes_per_call / 1e6:,.3f} MB a call, floor "
                         f"{duration(self.floor_us)}, cold median {duration(self.median_us)} ({self.ratio:.1f}x), "
                         f"robust spread {self.spread:.1%} over {self.calls} calls", hang=len(indent) + 4)


def _cls(kernel: str, grid, block) -> tuple:
    return function(kernel), tuple(grid), tuple(block)


def assign(rows: list[Shape], calls: list[Call]) -> dict[int, list[Call]]:
    """ncu's calls of each shape (by the shape's index in rows). A shape is found by its function and geometry;
    where several shapes share them (elementwise_kernel at 8 x 128 for four different ops), ncu's distinct names in
    that class are paired with the shapes in the order each first ran -- ncu's names differ from the record's in
    spelling (template arguments, anonymous namespaces), not in launch order. Counts that do not pair: no calls."""
    by_cls: dict[tuple, list[int]] = {}
    for i, s in enumerate(rows):
        by_cls.setdefault(_cls(s.kernel, s.grid, s.block), []).append(i)
    out: dict[int, list[Call]] = {i: [] for i in range(len(rows))}
    for cls, idx in by_cls.items():
        mine = [c for c in calls if _cls(c.kernel, c.grid, c.block) == cls]
        if len(idx) == 1:
            out[idx[0]] = mine
            continue
        names: list[str] = []
        for c in mine:
            if c.kernel not in names:
                names.append(c.kernel)
        if len(names) == len(idx):
            for i, n in zip(sorted(idx, key=lambda i: rows[i].first), names):
                out[i] = [c for c in mine if c.kernel == n]
    return out


def judge(rows: list[Shape], calls: list[Call], ceiling_tbs: float, fixed_us: float = 0.0,
          others: list[Shape] | None = None) -> list[Floor]:
    """Each shape's floor and verdict from ncu's calls (the course's diagnosis with the shape's geometry).
    `others`: the step's other shapes, which ncu's filter may also have caught (they share a function name)."""
    if ceiling_tbs <= 0:
        raise AuditError(f"the copy ceiling must be positive, got {ceiling_tbs}")
    every = list(rows) + [s for s in (others or []) if s not in rows]
    got = assign(every, calls)
    out = []
    for i, s in enumerate(rows):
        mine = got[i]
        f = Floor(s, len(mine), None, [c.cold_us for c in mine],
                  ncu_resident=next((c.resident for c in mine if c.resident is not None), None))
        if len(mine) < MIN_CALLS:
            f.evidence.append(f"ncu measured {len(mine)} call{'' if len(mine) == 1 else 's'} of it; a floor and "
                              f"a spread need {MIN_CALLS}")
            out.append(f)
            continue
        f.bytes_per_call = statistics.median(c.bytes for c in mine)
        if f.bytes_per_call <= 0:
            f.evidence.append("ncu counted no DRAM bytes for it (all in cache?): no floor from bytes")
            out.append(f)
            continue
        geo = diagnosis.Geometry(s.blocks, s.sm_count, s.resident or None)
        d = diagnosis.diagnose(f.bytes_per_call, f.cold_us, ceiling_tbs, fixed_us=fixed_us, geometry=geo)
        f.floor_us, f.verdict, f.evidence = d.floor_us, d.verdict, list(d.reasons)
        f.evidence.append("cold: ncu flushed every cache before each call, clocks as the GPU runs them; ncu runs "
                          "one kernel at a time, so the spread is the calls' own (layers, positions), never a "
                          "neighbour's")
        if f.ncu_resident is not None and s.resident and f.ncu_resident != s.resident:
            f.evidence.append(f"ncu's occupancy limits give {f.ncu_resident} resident blocks per SM, the "
                              f"calculator {s.resident}")
        out.append(f)
    return out


def steps_needed(rows: list[Shape]) -> int:
    """How many steps ncu must profile for every shape to have MIN_CALLS calls (at least 2)."""
    least = min(r.calls_per_step for r in rows)
    return max(2, math.ceil(MIN_CALLS / least - 1e-9))


def offenders(rows: list[Shape], top: int = 5, by: str = "sms") -> list[Shape]:
    """The top shapes by idle SM-time: the ones step 4 measures."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise AuditError(f"top must be a positive integer, got {top!r}")
    return ranking(rows, by)[:top]


def no_floor(rows: list[Shape], why: str) -> list[Floor]:
    return [Floor(s, 0, None, evidence=[why]) for s in rows]


def measure(argv: list[str], rows: list[Shape], ceiling_tbs: float, fixed_us: float = 0.0, ncu: str = "ncu",
            timeout_s: float = 600, keep: str | Path | None = None, others: list[Shape] | None = None) -> list[Floor]:
    """Run the program under ncu on these shapes only and judge each. ncu missing, refused or failing: every
    shape without a floor, with the reason. `keep`: also write ncu's CSV there."""
    exe = shutil.which(ncu)
    if exe is None:
        return no_floor(rows, f"ncu ({ncu}) is not on PATH: no floor (step 4 needs Nsight Compute)")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "ncu.csv"
        env = dict(os.environ, **{ENV: "1"})
        try:
            p = subprocess.run(command(argv, rows, log, exe), capture_output=True, text=True, env=env,
                               timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return no_floor(rows, f"ncu ran past {timeout_s:.0f} s: no floor")
        text = log.read_text() if log.exists() else ""
        if keep is not None:
            Path(keep).write_text(text)
    said = text + "\n" + p.stdout + "\n" + p.stderr
    why = refusal(said)
    if why is not None:
        return no_floor(rows, f"ncu refused: {why}: no floor")
    status = program_failed(said, p.returncode)
    if status is not None:
        own = [ln for ln in (p.stderr + p.stdout).strip().splitlines() if ln.strip() and not ln.startswith("==")]
        return no_floor(rows, f"the program under ncu exited with status {status} "
                              f"({(own[-1:] or ['no output'])[0][:200]}): no floor")
    return judge(rows, parse(text), ceiling_tbs, fixed_us, others)
