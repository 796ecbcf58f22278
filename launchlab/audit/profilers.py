"""Live (a GPU): run a callable or a Python program under a profiler and read back its launches as a Trace.

- CUPTI's activity API through NVIDIA's cupti-python (`pip install cupti-python`; the library itself is the CUDA
  install's): every kernel the process launches, whatever launched it -- CuPy, PyTorch, a library -- with its
  grid, block, registers and static and dynamic shared memory (CONCURRENT_KERNEL records).
- torch.profiler (CUPTI through Kineto), for a program that uses PyTorch: its Chrome trace, read by
  launches.from_torch, each step a record_function range.

`run(fn, steps)` calls fn `warmup` times unprofiled, then `steps` times profiled (synchronized after each);
`run_script(argv)` runs a Python program (`python my_step.py ...`) in this process under the profiler, its steps
the `with audit.step():` blocks it marks (torch.profiler), or the whole run as one step.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import runpy
import sys
import tempfile
from pathlib import Path

from launchlab.audit import floors
from launchlab.audit.launches import STEP_MARK, AuditError, Trace, from_cupti, from_torch
from launchlab.core import mode, provenance

TOOLS = ("auto", "cupti", "torch")
KERNEL_FIELDS = ("name", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread",
                 "static_shared_memory", "dynamic_shared_memory", "start", "end", "stream_id", "correlation_id",
                 "graph_id", "graph_node_id", "device_id", "context_id", "cluster_x", "cluster_y", "cluster_z")


@contextlib.contextmanager
def step():
    """Mark one step of a program under audit: a record_function range for torch.profiler (none when torch is not
    loaded: CUPTI's record then counts the run as one step), and under ncu (LAUNCHLAB_AUDIT_NCU=1, set by
    launchlab.audit.floors) a cudaProfilerStart/Stop range, so that ncu profiles the steps and nothing else."""
    ncu = os.environ.get(floors.ENV, "").strip() == "1"
    torch = sys.modules.get("torch")
    if ncu:
        _synchronize()
        _profiler(True)
    try:
        if torch is None:
            yield
        else:
            with torch.profiler.record_function(STEP_MARK):
                yield
    finally:
        if ncu:
            _synchronize()
            _profiler(False)


def _profiler(on: bool) -> None:
    """cudaProfilerStart / cudaProfilerStop through the program's own CUDA runtime: torch's where torch has made its
    context (CuPy may be loaded beside it without using the GPU), else CuPy's."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        (torch.cuda.profiler.start if on else torch.cuda.profiler.stop)()
    elif "cupy" in sys.modules:
        rt = sys.modules["cupy"].cuda.runtime
        (rt.profilerStart if on else rt.profilerStop)()
    elif torch is not None:
        (torch.cuda.profiler.start if on else torch.cuda.profiler.stop)()


def _synchronize() -> None:
    if "torch" in sys.modules and sys.modules["torch"].cuda.is_initialized():
        sys.modules["torch"].cuda.synchronize()
    if "cupy" in sys.modules:
        sys.modules["cupy"].cuda.Device().synchronize()


def _device() -> dict:
    """The GPU the records are made on: its name, SM count, compute capability and driver (CuPy's, or torch's)."""
    try:
        p = provenance.collect()
        return {"name": p["gpu"], "sm_count": p["sm_count"], "compute_capability": p["compute_capability"],
                "driver": p["driver"]}
    except ImportError:
        import torch
        pr = torch.cuda.get_device_properties(torch.cuda.current_device())
        return {"name": pr.name, "sm_count": pr.multi_processor_count,
                "compute_capability": f"{pr.major}.{pr.minor}", "driver": "unknown"}


@contextlib.contextmanager
def cupti_records():
    """Collect CUPTI's kernel records of the block: yields the list they land in (filled when the block ends)."""
    try:
        from cupti import cupti
    except ImportError as e:
        raise AuditError(f"cupti-python is not importable here ({e}): pip install cupti-python, or audit through "
                         f"torch.profiler (--tool torch)") from None
    records: list[dict] = []

    def requested():
        return 8 << 20, 0

    def completed(activities):
        for a in activities:
            if a.kind == cupti.ActivityKind.CONCURRENT_KERNEL:
                records.append({k: (str(getattr(a, k)) if k == "name" else int(getattr(a, k)))
                                for k in KERNEL_FIELDS if hasattr(a, k)})

    cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
    cupti.activity_register_callbacks(requested, completed)
    try:
        yield records
        _synchronize()
        cupti.activity_flush_all(1)
    finally:
        cupti.activity_disable(cupti.ActivityKind.CONCURRENT_KERNEL)


def cupti_document(records: list[dict], steps: int, **extra) -> dict:
    """A CUPTI record as launches.from_cupti reads it (and tools/audit_record.py commits it)."""
    from importlib import metadata
    try:
        version = metadata.version("cupti-python")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"format": 1, "tool": "cupti-python", "cupti_python": version, "device": _device(), "steps": steps,
            "records": records, **extra}


def _choose(tool: str) -> str:
    if tool not in TOOLS:
        raise AuditError(f"tool must be one of {', '.join(TOOLS)}, got {tool!r}")
    if tool != "auto":
        return tool
    return "torch" if "torch" in sys.modules else "cupti"


def run(fn, steps: int = 8, warmup: int = 2, tool: str = "auto", save: str | Path | None = None) -> Trace:
    """Profile `steps` calls of fn after `warmup` unprofiled ones; auto: torch.profiler if the program has imported
    torch, CUPTI otherwise. `save`: also write the record there (gzipped JSON)."""
    mode.require_live("auditing a program's launches")
    if not callable(fn):
        raise AuditError(f"fn must be a callable (one step of the program), got {type(fn).__name__}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise AuditError(f"steps must be a positive integer, got {steps!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise AuditError(f"warmup must be 0 or more, got {warmup!r}")
    tool = _choose(tool)
    for _ in range(warmup):
        fn()
    _synchronize()
    if tool == "cupti":
        with cupti_records() as recs:
            for _ in range(steps):
                fn()
                _synchronize()
        doc = cupti_document(recs, steps)
        trace = from_cupti(doc, source="cupti-python, in process")
    else:
        doc = _torch_profile(lambda: [_one_step(fn) for _ in range(steps)])
        trace = from_torch(doc, steps, source="torch.profiler, in process")
    if save is not None:
        with gzip.open(save, "wt") as z:
            json.dump(doc, z)
    return trace


def _one_step(fn) -> None:
    with step():
        fn()
    _synchronize()


def _torch_profile(body) -> dict:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        body()
        _synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        return json.loads(Path(path).read_text())
    finally:
        os.unlink(path)


def run_script(argv: list[str], tool: str = "auto", save: str | Path | None = None) -> Trace:
    """Run a Python program (argv: ["python", "my_step.py", ...] or ["my_step.py", ...]) in this process under the
    profiler; auto: CUPTI (it sees every kernel, PyTorch's too). A program that fails is reported with its error,
    and nothing is audited."""
    mode.require_live("auditing a program's launches")
    args = list(argv)
    if args and Path(args[0]).name.startswith("python"):
        args = args[1:]
    if not args or not args[0].endswith(".py") or not Path(args[0]).is_file():
        raise AuditError(f"give a Python program to run: python my_step.py ..., got {' '.join(argv) or 'nothing'}")
    tool = "cupti" if tool == "auto" else _choose(tool)
    script = args[0]
    saved = sys.argv[:]

    def body():
        sys.argv = args
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            if e.code not in (0, None):
                raise AuditError(f"{script} exited with status {e.code}: nothing audited") from None
        except Exception as e:  # noqa: BLE001 - the program's own failure, said in one line
            raise AuditError(f"{script} failed: {type(e).__name__}: {e}") from None
        finally:
            sys.argv = saved

    if tool == "cupti":
        with cupti_records() as recs:
            body()
        doc = cupti_document(recs, 1, program=args)
        trace = from_cupti(doc, source=f"cupti-python: {' '.join(args)}")
    else:
        doc = _torch_profile(body)
        trace = from_torch(doc, source=f"torch.profiler: {' '.join(args)}")
    if save is not None:
        with gzip.open(save, "wt") as z:
            json.dump(doc, z)
    return trace
