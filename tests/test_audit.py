"""The audit of any program (issue 40), on CPU against records made on the H200 (data/audit/, tools/audit_record.py,
2026-12-04): three transformers decode steps under torch.profiler and the course's own decode step under CUPTI.
The expected figures are worked out from the raw records (and by hand where said), not by the code under test."""
import copy
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab import audit
from launchlab.audit import crosscheck

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "audit"
MODELS = ("llama", "deepseek_v3", "qwen3_next")


def raw(name: str) -> dict:
    return json.loads(gzip.open(DATA / name).read())


@pytest.fixture(scope="module")
def llama():
    t = audit.load(DATA / "llama.trace.json.gz")
    return t, audit.table(t)


@pytest.fixture(scope="module")
def course_doc():
    return raw("course_decode.cupti.json.gz")


def kernels(doc):
    return [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]


# ------------------------------------------------------------------ step 1: the launches, as recorded
@pytest.mark.parametrize("name", MODELS)
def test_every_kernel_of_a_trace_lands_in_one_of_its_eight_marked_steps(name):
    doc = raw(f"{name}.trace.json.gz")
    t = audit.from_torch(doc)
    assert t.steps == 8 and t.gpu.name == "NVIDIA H200" and t.gpu.sm_count == 132
    assert len(t.launches) == len(kernels(doc)) == len(t.in_steps)
    assert {x.step for x in t.launches} == set(range(8))
    assert t.notes == ["steps: 8 'launchlab.audit.step' ranges"]                # which marks made the steps


def test_a_trace_asked_for_other_steps_than_it_marks_is_refused():
    with pytest.raises(audit.AuditError, match="marks 8 steps"):
        audit.load(DATA / "llama.trace.json.gz", steps=4)


def test_a_trace_without_marks_is_taken_as_the_steps_given():
    doc = raw("llama.trace.json.gz")
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("name") != audit.STEP_MARK]
    t = audit.from_torch(doc, steps=8)
    assert t.steps == 8 and all(x.step is None for x in t.launches) and len(t.in_steps) == 1616
    assert t.notes == ["no step ranges in the trace (neither 'launchlab.audit.step' nor 'ProfilerStep#N'): its 1616 "
                       "launches are taken as 8 step(s)"]
    assert audit.from_torch(doc).steps == 1          # none given: the whole trace is one step


# ------------------------------------------------------------------ steps 2-3: the table, worked out apart
def test_the_rows_add_up_to_the_trace(llama):
    t, rows = llama
    doc = raw("llama.trace.json.gz")
    ks = kernels(doc)
    assert sum(r.calls for r in rows) == len(ks) == 1616
    assert sum(r.us_per_step for r in rows) == pytest.approx(sum(e["dur"] for e in ks) / 8)
    shapes = {(e["name"], tuple(e["args"]["grid"]), tuple(e["args"]["block"])) for e in ks}
    assert len(rows) == len(shapes) == 44
    assert sum(r.share for r in rows) == pytest.approx(1.0)


def test_cudnns_attention_at_eight_blocks_worked_by_hand(llama):
    """cuDNN's SDPA kernel at grid (1, 8, 1) x 128, 186 registers, 86,336 B shared. By hand on the H200: registers
    186 x 32 = 5,952 -> 6,144 a warp, 16,384 / 6,144 = 2 warps per sub-partition -> 2 blocks of 4 warps; shared
    86,336 + 1,024 -> 87,424 B, 233,472 / 87,424 = 2 blocks: resident 2, both limits. 8 blocks / 132 SMs = 0.0606;
    wave fill 8 / 264 = 0.0303."""
    _, rows = llama
    (r,) = [r for r in rows if r.kernel.startswith("cudnn_generated_fort_native_sdpa") and r.grid == (1, 8, 1)]
    ks = [e for e in kernels(raw("llama.trace.json.gz")) if e["name"] == r.kernel and e["args"]["grid"] == [1, 8, 1]]
    assert (r.calls, r.calls_per_step, r.registers, r.smem, r.threads) == (32, 4.0, 186, 86336, 128)
    us = sum(e["dur"] for e in ks) / 8
    assert r.us_per_step == pytest.approx(us)
    assert r.resident == 2 and set(r.limiter) == {"registers", "shared memory"}
    assert r.sms_share == pytest.approx(8 / 132) and r.wave_fill == pytest.approx(8 / 264)
    assert r.idle_sm_us == pytest.approx(us * (1 - 8 / 132))
    assert r.idle_wave_us == pytest.approx(us * (1 - 8 / 264))


def test_a_cublas_gemv_at_88_blocks_one_resident_worked_by_hand(llama):
    """cuBLAS's nvjet GEMV at grid (4, 22, 1) x 384, 168 registers, 225,652 B shared: shared 226,676 -> 226,688 B,
    one block per SM; registers 168 x 32 = 5,376 a warp, 16,384 / 5,376 = 3 warps per sub-partition, 12 / 12 warps
    = 1 block. 88 of 132 SMs get a block: a third of its SM-time idle, by either column."""
    _, rows = llama
    (r,) = [r for r in rows if r.grid == (4, 22, 1) and r.threads == 384]
    assert (r.registers, r.smem, r.resident) == (168, 225652, 1)
    assert r.sms_share == pytest.approx(88 / 132) == r.wave_fill
    assert r.idle_sm_us == pytest.approx(r.us_per_step / 3)


def test_a_grid_past_the_sms_is_idle_by_wave_fill_and_not_by_blocks_over_sms(course_doc):
    """The course's add_inplace at 28 blocks (8 resident) and cuBLAS's 4 x 28 GEMV: the first is idle by both
    columns; a grid of 132 or more is never idle by blocks / SMs, and only wave fill can still see empty slots."""
    rows = audit.table(audit.from_cupti(course_doc))
    (add,) = [r for r in rows if r.kernel == "add_inplace"]
    assert (add.blocks, add.threads, add.resident) == (28, 256, 8)
    assert add.idle_sm_us == pytest.approx(add.us_per_step * (1 - 28 / 132))
    assert add.idle_wave_us == pytest.approx(add.us_per_step * (1 - 28 / (132 * 8)))
    for r in rows:
        if r.blocks >= 132:
            assert r.idle_sm_us == 0.0
            assert (r.wave_fill == 1.0) == (r.blocks >= 132 * r.resident)


def test_the_two_rankings_differ_where_resident_blocks_differ(course_doc):
    rows = audit.table(audit.from_cupti(course_doc))
    by_sms, by_wave = audit.ranking(rows, "sms"), audit.ranking(rows, "wave")
    assert by_sms[0].kernel == "rms_norm_f32" and by_sms != by_wave
    assert [r.idle_sm_us for r in by_sms] == sorted((r.idle_sm_us for r in rows), reverse=True)
    with pytest.raises(ValueError, match="'sms' or 'wave'"):
        audit.ranking(rows, "time")


@pytest.mark.parametrize("name, share", [("llama", 0.37), ("deepseek_v3", 0.23), ("qwen3_next", 0.65)])
def test_the_share_of_gpu_time_in_launches_that_leave_half_the_sms_idle(name, share):
    """From the raw events: kernel time of launches with fewer blocks than half of 132 SMs, over all kernel time."""
    ks = kernels(raw(f"{name}.trace.json.gz"))
    blocks = lambda e: e["args"]["grid"][0] * e["args"]["grid"][1] * e["args"]["grid"][2]  # noqa: E731
    want = sum(e["dur"] for e in ks if blocks(e) / 132 < 0.5) / sum(e["dur"] for e in ks)
    t = audit.load(DATA / f"{name}.trace.json.gz")
    got = audit.idle_share(audit.table(t))
    assert got == pytest.approx(want) and round(got, 2) == share


# ------------------------------------------------------------------ the record's own figures, checked
@pytest.mark.parametrize("name", MODELS)
def test_kinetos_blocks_per_sm_agrees_and_its_occupancy_estimate_is_checked(name):
    """Kineto's `blocks per SM` is blocks / SMs: it agrees on every row. Its occupancy estimate disagrees on
    kernels with more than 160 KB of shared memory (Kineto gives them 0 %): reported beside the row, not dropped."""
    rows = audit.table(audit.load(DATA / f"{name}.trace.json.gz"))
    assert not any("blocks per SM" in d for r in rows for d in r.disagreements)
    disagree = [r for r in rows if r.disagreements]
    assert disagree and all(r.smem > 160_000 and "estimated occupancy 0 %" in r.disagreements[0] for r in disagree)


def test_a_trace_from_another_gpu_is_read_with_that_gpus_sm_count():
    """The SM count is the trace's own: the same launches said to come from an A100 (108 SMs, sm_80) give blocks /
    108, and Kineto's figures, made on 132 SMs, then disagree and say so."""
    doc = raw("llama.trace.json.gz")
    p = doc["deviceProperties"][0]
    p.update(name="NVIDIA A100-SXM4-80GB", numSms=108, computeMajor=8, computeMinor=0,
             sharedMemPerMultiprocessor=167936, sharedMemPerBlockOptin=166912)
    t = audit.from_torch(doc)
    rows = audit.table(t)
    assert t.gpu.sm_count == 108 and t.gpu.max_blocks_per_sm == 32
    (r,) = [r for r in rows if r.kernel.startswith("cudnn_generated_fort_native_sdpa")]
    assert r.sms_share == pytest.approx(8 / 108)
    assert any("blocks per SM" in d for d in r.disagreements)
    big = [r for r in rows if r.smem > 166912]
    assert big and all(r.resident == 0 and r.wave_fill is None for r in big)   # too much shared memory for an A100


# ------------------------------------------------------------------ bad records, said before any table
def test_bad_records_are_refused_in_words(tmp_path):
    doc = raw("llama.trace.json.gz")
    cases = {
        "no kernels": ({**doc, "traceEvents": [e for e in doc["traceEvents"] if e.get("cat") != "kernel"]},
                       "launched none"),
        "no device": ({**doc, "deviceProperties": []}, "no deviceProperties"),
        "unknown arch": ({**doc, "deviceProperties": [{**doc["deviceProperties"][0], "computeMajor": 6,
                                                        "computeMinor": 1}]}, "no published limits"),
        "not a trace": ({"hello": 1}, "neither a torch.profiler"),
        "cupti, empty": ({"records": [], "device": {"name": "NVIDIA H200", "sm_count": 132,
                                                    "compute_capability": "9.0"}}, "launched none"),
    }
    for label, (d, msg) in cases.items():
        p = tmp_path / f"{label}.json"
        p.write_text(json.dumps(d))
        with pytest.raises(audit.AuditError, match=msg):
            audit.load(p)
    bad = copy.deepcopy(doc)
    next(e for e in bad["traceEvents"] if e.get("cat") == "kernel")["args"]["grid"] = [0, 1, 1]
    with pytest.raises(audit.AuditError, match="grid must be"):
        audit.from_torch(bad)
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(audit.AuditError, match="not a JSON record"):
        audit.load(tmp_path / "x.json")
    with pytest.raises(audit.AuditError, match="no record at"):
        audit.load(tmp_path / "missing.json")


def test_plain_and_gzipped_records_read_the_same(tmp_path):
    p = tmp_path / "llama.json"
    p.write_bytes(gzip.open(DATA / "llama.trace.json.gz").read())
    a, b = audit.load(p), audit.load(DATA / "llama.trace.json.gz")
    assert a.launches == b.launches


# ------------------------------------------------------------------ the CUPTI path: the course's own decode step
def test_cupti_records_of_the_course_step_agree_with_its_own_launch_log(course_doc):
    """Every one of the course's own launches in 3 steps (1,215 a step; 514 cuBLAS calls a step apart, which made
    748 kernels) is a CUPTI record of the same grid and block, in order."""
    a = crosscheck.against_log(course_doc)
    assert a.agrees and a.mismatches == []
    per_step = [sum(1 for x in s if not x[1].startswith("cublas:")) for s in course_doc["course_log"]]
    assert per_step == [1215] * 3 and a.course_launches == a.matched == 3645
    assert a.cublas_calls == 3 * 514 and a.course_launches + a.cublas_kernels == len(course_doc["records"]) == 5889


def test_the_crosscheck_sees_a_changed_grid_and_a_stray_kernel(course_doc):
    doc = copy.deepcopy(course_doc)
    rec = sorted(doc["records"], key=lambda r: r["correlation_id"])
    target = next(r for r in rec if r["name"] == "add_inplace")
    target["grid_x"] += 1
    a = crosscheck.against_log(doc)
    assert not a.agrees and len(a.mismatches) == 1 and "add_inplace" in a.mismatches[0]
    doc = copy.deepcopy(course_doc)
    doc["records"].append({**doc["records"][0], "name": "someone_elses_kernel", "correlation_id": 10 ** 12})
    a = crosscheck.against_log(doc)
    assert not a.agrees and "someone_elses_kernel" in a.mismatches[-1]
    with pytest.raises(audit.AuditError, match="no course launch log"):
        crosscheck.against_log({"records": [], "steps": 1})


def test_the_course_step_read_from_cupti_matches_the_course_log_per_shape(course_doc):
    """A shape's calls per step are the log's count of that kernel at that geometry (the log is the course's own)."""
    rows = audit.table(audit.from_cupti(course_doc))
    log = course_doc["course_log"][0]
    n = sum(1 for _site, k, grid, block, _ in log if k == "rms_norm:rms_norm_f32" and grid == [1] and block == 128)
    (r,) = [r for r in rows if r.kernel == "rms_norm_f32" and r.grid == (1, 1, 1) and r.threads == 128]
    assert r.calls_per_step == n == 281


# ------------------------------------------------------------------ export and the CLI
def test_csv_and_json_hold_every_row(llama, tmp_path):
    import csv
    t, rows = llama
    got = list(csv.DictReader(audit.to_csv(rows).splitlines()))
    assert len(got) == 44 and got[0]["key"] == rows[0].key
    assert float(got[0]["us_per_step"]) == pytest.approx(rows[0].us_per_step)
    j = json.loads(audit.to_json(t, rows))
    assert j["sm_count"] == 132 and j["steps"] == 8 and len(j["rows"]) == 44
    assert j["launches_per_step"] == pytest.approx(202) and round(j["idle_share_below_half"], 2) == 0.37


def _cli(*args):
    env = dict(os.environ, LAUNCHLAB_MODE="replay")
    return subprocess.run([sys.executable, "-m", "launchlab", "audit", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)


def test_the_cli_audits_a_record_and_writes_its_files(tmp_path):
    r = _cli("--trace", str(DATA / "qwen3_next.trace.json.gz"), "--by", "wave", "--top", "4",
             "--csv", str(tmp_path / "a.csv"), "--json", str(tmp_path / "a.json"), "--figure", str(tmp_path / "a.png"))
    assert r.returncode == 0, r.stderr
    assert "107 launch shapes, 523 launches" in r.stdout and "wave fill" in r.stdout
    assert (tmp_path / "a.png").stat().st_size > 10_000 and json.loads((tmp_path / "a.json").read_text())["rows"]


def test_the_cli_refuses_in_one_line(tmp_path):
    for args, msg in ((["--trace", str(tmp_path / "none.json")], "no record at"),
                      ([], "one of the two"),
                      (["--trace", str(DATA / "llama.trace.json.gz"), "--", "python", "x.py"], "one of the two"),
                      (["--", "python", "my_step.py"], "needs a CUDA GPU"),
                      (["--floors", "2", "--trace", str(DATA / "llama.trace.json.gz")], "give it one"),
                      (["--floors", "-1", "--", "python", "my_step.py"], "(1 or more), got -1"),
                      (["--floors", "0", "--", "python", "my_step.py"], "needs a CUDA GPU")):   # 0: no step 4
        r = _cli(*args)
        assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_figure_is_legible_and_puts_the_worst_first(llama):
    import matplotlib
    matplotlib.use("Agg")
    from launchlab.audit import figure
    from launchlab.core import figure as style
    t, rows = llama
    fig = figure.idle_bars(t, rows, top=10, title="Llama-style decode, 4 layers")
    assert style.legibility(fig) == []
    widths = [p.get_width() for p in fig.axes[0].patches[:10]]        # the idle bars, top to bottom
    assert widths == sorted(widths, reverse=True) and widths[0] == pytest.approx(audit.ranking(rows)[0].idle_sm_us)


# ------------------------------------------------------------------ live (on the H200)
@pytest.mark.gpu
def test_live_cupti_run_of_a_cupy_kernel_reads_its_geometry():
    import cupy as cp
    from launchlab.audit import profilers
    k = cp.RawKernel(r'extern "C" __global__ void launchlab_audit_probe(float* x) { x[blockIdx.x * blockDim.x + '
                     r'threadIdx.x] += 1.0f; }', "launchlab_audit_probe")
    x = cp.zeros(12 * 128, cp.float32)
    t = profilers.run(lambda: k((12,), (128,), (x,)), steps=5, warmup=1, tool="cupti")
    rows = [r for r in audit.table(t) if r.kernel == "launchlab_audit_probe"]
    assert t.tool == "cupti-python" and t.steps == 5 and len(rows) == 1
    assert (rows[0].grid, rows[0].block, rows[0].calls) == ((12, 1, 1), (128, 1, 1), 5)
    assert float(x[0]) == 6.0


@pytest.mark.gpu
def test_live_torch_run_marks_each_step():
    torch = pytest.importorskip("torch")
    from launchlab.audit import profilers
    a = torch.ones(1 << 20, device="cuda")
    t = profilers.run(lambda: a.mul_(1.0), steps=4, warmup=1, tool="torch")
    # each step is counted from the profiler's own ranges, and the trace says so (never from a guess)
    assert t.tool == "torch.profiler" and t.steps == 4 and t.steps_from == "launchlab.audit.step"
    assert t.notes == ["steps: 4 'launchlab.audit.step' ranges"]
    assert sum(r.calls for r in audit.table(t)) >= 4 and {x.step for x in t.in_steps} == {0, 1, 2, 3}


@pytest.mark.gpu
def test_live_run_script_audits_a_cupy_program_and_says_when_it_fails(tmp_path):
    from launchlab.audit import profilers
    ok = tmp_path / "step.py"
    ok.write_text("import cupy as cp\nx = cp.zeros(1 << 20, cp.float32)\nfor _ in range(3):\n    x += 1\n"
                  "cp.cuda.Device().synchronize()\n")
    t = profilers.run_script(["python", str(ok)], save=tmp_path / "rec.json.gz")
    rows = audit.table(t)
    assert t.tool == "cupti-python" and t.steps == 1 and sum(r.calls for r in rows) >= 3
    assert audit.load(tmp_path / "rec.json.gz").launches == t.launches
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('no GPU work today')\n")
    with pytest.raises(audit.AuditError, match="bad.py failed: RuntimeError: no GPU work today"):
        profilers.run_script(["python", str(bad)])
    idle = tmp_path / "idle.py"
    idle.write_text("print('nothing launched')\n")
    with pytest.raises(audit.AuditError, match="launched none"):
        profilers.run_script([str(idle)])


def test_the_crosscheck_orders_records_by_launch_and_counts_a_2d_blocks_threads(course_doc):
    """CUPTI hands its buffers over in any order: the records are matched by correlation id (the launch order), so
    the same records reversed agree just the same. A block is its thread count: a record of 32 x 8 x 1 is the 256
    threads the course logged."""
    doc = copy.deepcopy(course_doc)
    doc["records"] = sorted(doc["records"], key=lambda r: -r["correlation_id"])
    a = crosscheck.against_log(doc)
    assert a.agrees and a.matched == 3645
    doc = copy.deepcopy(course_doc)
    target = next(r for r in sorted(doc["records"], key=lambda r: r["correlation_id"])
                  if r["name"] == "add_inplace" and r["block_x"] == 256 and r["block_y"] == r["block_z"] == 1)
    target["block_x"], target["block_y"] = 32, 8
    assert crosscheck.against_log(doc).agrees
    target["block_y"] = 4                                                        # 128 threads: no longer the log's
    a = crosscheck.against_log(doc)
    assert not a.agrees and a.matched == 3644 and "x 128" in a.mismatches[0]
