"""Grading that re-runs the learner's fix (the lab's steps 6-7) instead of reading what it printed.

The notebook's answers say what the learner's cells printed; this module finds out what their code does.

  harness   (launchlab.faces.rerun_harness, in the sandbox) the submission's notebook, read there (any nbformat
            the intake takes), runs again in a fresh process, in replay, as the notebook runs: every code cell from
            the top through step 7, in order (so a constant or a helper of an earlier step is there, as it was for
            the learner); then its `plan` is called at widths the notebook never shows (WIDTHS), and its `arms` and
            the order fix.rep() measured them in are read back as plain JSON, over a descriptor of their own; what
            the cells print is drained and capped like the collector's (runner.drain)
  grader    (here, in the grader's own process) the plan's coverage at every width by the kernel's index rule
            (launchlab.kernels.residual_add.coverage), its blocks at 7,168 against step 2's 50 % line, the two arms
            as the decode step sees them (which plan each launches, which other gates each sets), and the kernel the
            plan launches compiled with NVRTC (its registers and spills)
  --gpu     the same cells run again in the sandbox LIVE, with the GPU's device nodes bound and nothing else added
            (a cell that hangs the GPU is killed at GPU_SECONDS; its neighbours are graded as usual); then, in the
            grader's own process, the plan launched raw at every width between guard words (missed elements and
            writes past the end counted on the GPU: residual_add.counted), and the learner's two arms measured by
            the grader itself -- its own ABBA of three pairs and its own cmp at 2,048 and 131,072 on one model
            built for the whole class (the lab's fix module, as its manifest names it: abba, compare)

What the harness reports comes from a process that ran the learner's code, which could print anything; nothing
it reports is taken for more than the learner could have made true by writing it (a plan's outputs are the plan;
the order is the order fix.rep() logged). Every judgement -- coverage, the arms' configurations, the measured
gain and the bytes -- is made here from those plain values. lab_solutions/lab_tests.py scores q6 and q7 on them.
"""
from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import replace

from launchlab import sections
from launchlab.core import loader, mode, paths
from launchlab.faces import collect, confine, runner, sandbox, scan
from launchlab.kernels import residual_add as ra

WIDTHS = (1, 2, 31, 1000, 1001, 2880, 5120, 7168, 7169, 100003)     # n the notebook never shows, and 7,168
N = 7168
SMS = 132
TARGET_BLOCKS = SMS // 2                 # step 2's line: off the list at blocks / SMs >= 50 %
CPU_SECONDS = 90.0                       # the replay harness, one submission (the lab through step 7: ~6 s)
GPU_SECONDS = 45.0                       # the live harness (a cell that spins the GPU is stopped here): the cells
                                         # above step 6 give only their definitions there, the plan's cell ~3 s
MARK = "LAUNCHLAB-RERUN "
GPU_LIMITS = replace(sandbox.LIMITS, address_space_bytes=1 << 46)   # CUDA reserves a large virtual address space


def lab_fix():
    """The graded lab's fix module, as its section's manifest names it (the registry: `rerun`)."""
    return next(s for s in sections.all() if s.graded).rerun


def cells(nb) -> list[list[str]]:
    """[[label, source], ...]: the code cells the re-run executes, in notebook order -- every one from the top
    through the last cell of `## Step 7` (otter's own cells and the embedded tests left out, whatever their
    metadata says), each labelled by its step ("step 6, cell 1"; "the top, cell 1" above step 1). `nb` is the
    notebook's bytes or its dict, any nbformat version nbformat reads (a version 3 notebook is converted)."""
    import nbformat
    sys.modules.setdefault("rfc3987_syntax", None)      # as the collector: an import that only slows jsonschema
    if isinstance(nb, (bytes, bytearray)):
        book = nbformat.reads(bytes(nb).decode("utf-8"), as_version=4)
    else:
        book = nbformat.from_dict(nb)
        if book.get("nbformat", 4) < 4 or "worksheets" in book:
            book = nbformat.convert(book, 4)
    code = [c for c in book.cells if not collect.otter_cell(c)]
    owner = collect.steps(code)
    last = max((i for i, q in enumerate(owner) if q == "q7" and code[i].cell_type == "code"), default=None)
    if last is None:
        last = max((i for i, q in enumerate(owner) if q == "q6" and code[i].cell_type == "code"), default=-1)
    out, count = [], {}
    for i, (c, q) in enumerate(zip(code, owner)):
        if i > last:
            break
        src = "".join(c.source)
        if c.cell_type != "code" or "# BEGIN TEST CONFIG" in src:
            continue
        count[q] = count.get(q, 0) + 1
        out.append([f"step {q[1:]}, cell {count[q]}" if q else f"the top, cell {count[q]}", src])
    return out


REPORT_BYTES = 1 << 20                   # what is kept of the harness's report (an honest one: ~2 KB)
LOG_BYTES = 256 * 1024                   # what is kept of what the cells print (the rest is counted)


def _run(data: bytes, job: dict, gpu: bool, timeout: float, sandboxed: bool) -> tuple[dict, str]:  # pragma: no mutate block (not scoring)
    """The harness on the notebook `data` in the sandbox (or, for trusted work, a process of its own): (its
    report, status). The notebook reaches it as a memory file on its stdin, its report comes back over a pipe
    of its own, what its cells print over another; both are drained with caps (runner.drain), so a flood grows
    neither the grader nor its wait. A run past `timeout` is killed with its process group."""
    rep_r, rep_w = os.pipe()
    log_r, log_w = os.pipe()
    mem = os.memfd_create("submission.ipynb", 0)
    os.write(mem, data)
    os.lseek(mem, 0, os.SEEK_SET)
    argv = [sys.executable, "-m", "launchlab.faces.rerun_harness", json.dumps(job), "--report-fd", str(rep_w)]
    conf = confine.Confinement(GPU_LIMITS if gpu else sandbox.LIMITS)
    if sandboxed:
        cmd, env = conf.wrap(sandbox.command(argv, gpu=gpu)), {"PATH": "/usr/bin:/bin"}
    else:
        cmd = conf.wrap(argv)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), "MPLBACKEND": "Agg",
               "LAUNCHLAB_MODE": "live" if gpu else "replay",
               "PYTHONPATH": os.pathsep.join([str(paths.ROOT), os.environ.get("PYTHONPATH", "")])}
    t0 = time.monotonic()
    status = "ok"
    try:
        p = subprocess.Popen(cmd, env=env, stdin=mem, stdout=log_w, stderr=log_w, pass_fds=(rep_w,),
                             start_new_session=True)
        for fd in (rep_w, log_w, mem):
            os.close(fd)
        rep_w = log_w = mem = None
        got, timed_out = runner.drain(p, {rep_r: REPORT_BYTES, log_r: LOG_BYTES}, time.monotonic() + timeout)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()
        if timed_out:
            status = f"timeout: stopped after {timeout:.0f} s"
    finally:
        conf.close()
        for fd in (rep_r, rep_w, log_r, log_w, mem):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
    report = scan.marked_line(got[rep_r][0], MARK.encode()) or {}
    if status == "ok" and not report:
        tail = got[log_r][0].decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        status = f"the harness did not report ({tail[0][:200]})"
    report["seconds"] = round(time.monotonic() - t0, 1)
    report["output_bytes"] = got[log_r][1]          # what its cells printed, counted (LOG_BYTES of it kept)
    return report, status


def _plan_list(v) -> list | None:
    return v if isinstance(v, list) and len(v) == 3 and all(type(x) is int for x in v) else None


def judged(report: dict) -> dict:
    """What the grader makes of a harness report: per width the plan, its coverage (or why there is none), the
    blocks at 7,168, the arms as configurations."""
    fix = lab_fix()
    widths = {}
    plans = report.get("plans") if isinstance(report.get("plans"), dict) else {}
    for n in WIDTHS:
        got = plans.get(str(n))
        p = _plan_list(got.get("plan")) if isinstance(got, dict) else None
        row = {"plan": p, "error": None, "missed": None, "past_end": None}
        if p is None:
            row["error"] = (str(got.get("error"))[:200] if isinstance(got, dict) and got.get("error")
                            else "the plan gave no (grid, block, ept) of whole numbers")
        else:
            try:
                ra.check(ra.Plan(*p), n)
                c = ra.coverage(ra.Plan(*p), n)
                row["missed"], row["past_end"] = c.missed, c.past_end
            except ra.PlanError as e:
                row["error"] = str(e)[:300]
                if p[2] >= 1 and p[0] >= 1 and p[1] >= 1:
                    c = ra.coverage(ra.Plan(*p), n)
                    row["missed"], row["past_end"] = c.missed, c.past_end
        widths[str(n)] = row
    arms = {}
    raw = report.get("arms") if isinstance(report.get("arms"), dict) else {}
    mine = widths[str(N)]["plan"]
    for name in ("A", "B"):
        env = raw.get(name)
        try:
            s = fix.settings(env if isinstance(env, dict) else {})
            if not isinstance(env, dict):
                raise fix.FixError(f"arm {name} is not a dict of LAUNCHLAB_* settings")
            main = fix.gates.preset("main")
            extra = sorted([k, v] for k, v in s.items() if v != main[k] and k != ra.GATE)
            arms[name] = {"env": env, "plan": mine if s[ra.GATE] == "1" else None, "extra": extra, "error": None}
        except (fix.FixError, TypeError) as e:
            arms[name] = {"env": None, "plan": None, "extra": [], "error": str(e)[:200]}
    order = report.get("order")
    return {"widths": widths, "blocks_at_n": mine[0] if mine else None, "arms": arms,
            "order": order if isinstance(order, str) and len(order) <= 64 else None,
            "errors": [str(e)[:300] for e in report.get("errors", [])][:10] if isinstance(report.get("errors"), list)
            else []}


def compiled() -> dict:
    """The kernel every plan launches, compiled with NVRTC here (the grader's own build): registers and spills."""
    res, where = loader.compiled_resources(ra.FAMILY, ra.KERNEL)
    return {"registers": res.registers, "spill_bytes": res.spill_stores + res.spill_loads, "by": where}


def facts(data, sandboxed: bool = True, gpu: bool = False, measurer=None) -> dict:  # pragma: no mutate block (not scoring)
    """Everything q6 and q7 are scored on, for one submission (the notebook's bytes; a dict is dumped first): the
    replay re-run, judged here; with `gpu`, the live re-run in the sandbox and `measurer` (a GpuMeasurer) on the
    learner's plan and arms. The notebook is read only inside the harness, never in the grader's process."""
    if not isinstance(data, (bytes, bytearray)):
        data = json.dumps(data).encode()
    job = {"widths": list(WIDTHS), "upto_plan": False}
    report, status = _run(bytes(data), job, False, CPU_SECONDS, sandboxed)
    out = {"status": status, **judged(report), "compiled": compiled(), "gpu": None,
           "seconds": report.get("seconds"), "output_bytes": report.get("output_bytes")}
    if gpu:
        live, live_status = _run(bytes(data), dict(job, upto_plan=True), True, GPU_SECONDS, sandboxed)
        g = {"status": live_status, "seconds": live.get("seconds"), "device": live.get("device")}
        if live_status == "ok" and measurer is not None:
            g.update(measurer.measure(judged(live), out))
        out["gpu"] = g
    return out


class GpuMeasurer:  # pragma: no mutate block (live only)
    """The grader's own measurements on the GPU, in its own process: one decode model for the whole class, a
    learner's plan counted raw at every width, and its two arms ABBA'd and cmp'd by the grader."""

    def __init__(self):
        mode.require_live("grading on the GPU")
        fix = self.fix = lab_fix()
        self.model = fix._model()
        self.cache: dict = {}
        ctl = fix.abba(self.model, fix.Config((28, 256, 1)), fix.Config(None))     # main's shape, new kernel
        self.control_ms = statistics.median(ctl.arm("B")) - statistics.median(ctl.arm("A"))
        self.control = {"order": ctl.order, "ms": ctl.ms}

    def measure(self, live: dict, cpu: dict) -> dict:
        fix = self.fix
        counted = {}
        for n, row in live["widths"].items():
            p = row["plan"]
            if p is None:
                counted[n] = {"error": row["error"]}
                continue
            try:
                c = ra.counted(ra.Plan(*p), int(n))
                counted[n] = {"missed": c.missed, "past_end": c.past_end, "wrong": c.wrong}
            except (ra.PlanError, ValueError) as e:
                counted[n] = {"error": str(e)[:200]}
        arms = cpu["arms"]
        got = {"counted": counted, "abba": None, "cmp": None, "control_ms": self.control_ms}
        if any(arms[x]["error"] for x in "AB"):
            return got
        ca, cb = (fix.Config(None if arms[x]["plan"] is None else tuple(arms[x]["plan"]),
                             tuple(tuple(e) for e in arms[x]["extra"])) for x in "AB")
        key = (ca, cb)
        if key not in self.cache:
            try:
                run = fix.abba(self.model, ca, cb)
                cmps = fix.compare(self.model, ca, cb)
                self.cache[key] = {"abba": {"order": run.order, "ms": run.ms},
                                   "cmp": {str(c.depth): {"identical": c.identical, "differing": c.differing}
                                           for c in cmps}}
            except (ValueError, RuntimeError) as e:
                self.cache[key] = {"abba": None, "cmp": None, "error": f"{type(e).__name__}: {str(e)[:200]}"}
        got.update(self.cache[key])
        return got
