"""The audit on traces as others record them (issue 57): torch.profiler's own steps, a range of any name, older
and other formats, traces of several GPUs and of accelerators that are not NVIDIA's -- every one read or refused in
one line, never a traceback. The traces here are built by hand in the shapes public Kineto traces have
(../shared/notes/real-traces.md, kept in docs/notes/audit.md): a kernel event's `args.correlation` equals that of
the runtime call that launched it; `ProfilerStep#N` is a CPU-side `user_annotation` range. The expected counts are
written out from the events built, not from the code under test."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab import audit

ROOT = Path(__file__).resolve().parent.parent
H200 = {"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0, "numSms": 132,
        "maxThreadsPerMultiprocessor": 2048, "regsPerMultiprocessor": 65536, "sharedMemPerMultiprocessor": 233472,
        "sharedMemPerBlockOptin": 232448, "warpSize": 32}


def kernel(ts: float, corr: int, name: str = "k", grid=(4, 1, 1), device: int = 0, cat: str = "kernel") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": 5.0,
            "args": {"device": device, "stream": 7, "correlation": corr, "grid": list(grid), "block": [128, 1, 1],
                     "registers per thread": 32, "shared memory": 0}}


def runtime(ts: float, corr: int, cat: str = "cuda_runtime") -> dict:
    return {"ph": "X", "cat": cat, "name": "cudaLaunchKernel", "ts": ts, "dur": 2.0, "args": {"correlation": corr}}


def cpu_range(name: str, ts: float, dur: float, cat: str = "user_annotation") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur}


def profiler_steps(cat_k: str = "kernel", cat_r: str = "cuda_runtime") -> dict:
    """Three ProfilerStep ranges (#5, #6, #7) of 100 µs from t = 100, two launches in each; one warm-up launch at
    t = 10, before them, and one flush at t = 450, after. Each kernel runs 200 µs after its launch: on the GPU it
    falls in the next step's CPU range or past all of them -- only the launch says which step it is."""
    ev = [cpu_range(f"ProfilerStep#{5 + i}", 100 + 100 * i, 100) for i in range(3)]
    launches = [(10, 1)] + [(120 + 100 * i + 40 * j, 2 + 2 * i + j) for i in range(3) for j in range(2)] + [(450, 9)]
    for t, c in launches:
        ev += [runtime(t, c, cat_r), kernel(t + 200, c, name=f"k{c}", cat=cat_k)]
    return {"traceEvents": ev, "deviceProperties": [H200]}


def test_torch_profilers_own_steps_hold_the_kernels_their_ranges_launched():
    t = audit.from_torch(profiler_steps())
    assert t.steps == 3
    assert {x.name: x.step for x in t.launches} == {"k1": None, "k2": 0, "k3": 0, "k4": 1, "k5": 1, "k6": 2,
                                                    "k7": 2, "k9": None}
    assert sorted(x.name for x in t.in_steps) == ["k2", "k3", "k4", "k5", "k6", "k7"]
    assert t.notes == ["steps: 3 torch.profiler's 'ProfilerStep#N' ranges (a kernel is in the step that launched it)",
                       "2 kernels launched outside every step are left out"]
    rows = audit.table(t)                                   # six names, one launch each, over 3 steps
    assert sorted(r.kernel for r in rows) == ["k2", "k3", "k4", "k5", "k6", "k7"]
    assert all(r.calls == 1 and r.calls_per_step == pytest.approx(1 / 3) for r in rows)


def test_an_older_trace_spells_its_categories_kernel_and_runtime():
    t = audit.from_torch(profiler_steps(cat_k="Kernel", cat_r="Runtime"))
    assert t.steps == 3 and len(t.in_steps) == 6


def test_the_courses_own_marks_come_before_torch_profilers_steps():
    doc = profiler_steps()
    doc["traceEvents"].append(cpu_range(audit.STEP_MARK, 300, 400, cat="gpu_user_annotation"))   # GPU: 300-700
    t = audit.from_torch(doc)
    assert t.steps == 1 and sorted(x.name for x in t.in_steps) == ["k2", "k3", "k4", "k5", "k6", "k7", "k9"]
    assert t.notes[0] == "steps: 1 'launchlab.audit.step' ranges"


def test_a_range_of_any_name_is_a_step_by_its_prefix_and_a_name_absent_is_refused():
    doc = profiler_steps()
    doc["traceEvents"] += [cpu_range("decode_token_0", 100, 150), cpu_range("decode_token_1", 250, 150),
                           cpu_range("prefill", 0, 50)]
    t = audit.from_torch(doc, mark="decode_token")
    # launches at 120, 160, 220 fall in decode_token_0 (100-250); 260, 320, 360 in decode_token_1 (250-400)
    assert t.steps == 2 and {x.name: x.step for x in t.in_steps} == {"k2": 0, "k3": 0, "k4": 0, "k5": 1,
                                                                     "k6": 1, "k7": 1}
    assert t.notes[0] == "steps: 2 'decode_token*' ranges (a kernel is in the step that launched it)"
    assert audit.from_torch(doc, mark="prefill").steps == 1
    with pytest.raises(audit.AuditError) as e:
        audit.from_torch(doc, mark="decode_tokens")
    assert str(e.value) == "the trace has no range named 'decode_tokens*' (a record_function or a GPU annotation)"


def test_steps_asked_for_must_be_the_steps_marked():
    with pytest.raises(audit.AuditError) as e:
        audit.from_torch(profiler_steps(), steps=5)
    assert str(e.value) == "the trace marks 3 steps (torch.profiler's 'ProfilerStep#N' ranges), not the 5 asked for"


def test_a_trace_without_launch_geometry_says_so_and_how_to_record_one():
    doc = profiler_steps()
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel":
            del e["args"]["grid"], e["args"]["block"]
    with pytest.raises(audit.AuditError) as e:
        audit.from_torch(doc)
    assert str(e.value) == ("the trace has 8 kernel events but no launch geometry (no grid or block in their "
                            "args): its profiler did not record it. Record the program again with a current "
                            "torch.profiler (ProfilerActivity.CUDA), whose kernel events carry grid and block")
    doc = profiler_steps()
    del next(e for e in doc["traceEvents"] if e.get("name") == "k4")["args"]["grid"]    # one of eight: left out
    t = audit.from_torch(doc)
    assert len(t.in_steps) == 5 and "1 kernel events without grid or block are left out" in t.notes


@pytest.mark.parametrize("props, cats, what", [
    ({"name": "AMD Radeon Graphics", "computeMajor": 9, "computeMinor": 0, "numSms": 110}, (), "an AMD GPU (ROCm)"),
    ({"name": "AMD Instinct MI250X", "computeMajor": 9, "computeMinor": 0, "numSms": 110}, (), "an AMD GPU (ROCm)"),
    ({"name": "ARTEMIS"}, ("mtia_runtime",), "a Meta MTIA accelerator"),
])
def test_a_trace_of_another_vendors_accelerator_is_refused_by_name_before_any_arithmetic(props, cats, what):
    doc = profiler_steps()
    doc["deviceProperties"] = [{"id": 0, **props}]
    doc["traceEvents"] += [{"ph": "X", "cat": c, "name": "x", "ts": 0, "dur": 1} for c in cats]
    with pytest.raises(audit.AuditError) as e:
        audit.from_torch(doc)
    assert f"was recorded on {what} ('{props['name']}')" in str(e.value)
    assert str(e.value).endswith("the audit's occupancy calculator and limits are NVIDIA's, so it audits NVIDIA "
                                 "GPUs only")


def test_mtia_events_alone_name_the_accelerator():
    doc = profiler_steps()
    doc["traceEvents"].append({"ph": "X", "cat": "mtia_ccp_events", "name": "x", "ts": 0, "dur": 1})
    with pytest.raises(audit.AuditError, match="a Meta MTIA accelerator .mtia_. events."):
        audit.from_torch(doc)


def test_a_trace_of_two_gpus_is_read_one_gpu_at_a_time():
    doc = profiler_steps()
    doc["deviceProperties"] = [H200, {**H200, "id": 1, "name": "NVIDIA A100-SXM4-80GB", "numSms": 108,
                                      "computeMajor": 8, "sharedMemPerMultiprocessor": 167936,
                                      "sharedMemPerBlockOptin": 166912}]
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel" and e["name"] in ("k3", "k5"):
            e["args"]["device"] = 1
    with pytest.raises(audit.AuditError) as e:
        audit.from_torch(doc)
    assert str(e.value) == "the trace's kernels ran on 2 GPUs ([0, 1]): pick one with --device N"
    one = audit.from_torch(doc, device=1)
    assert one.gpu.sm_count == 108 and sorted(x.name for x in one.in_steps) == ["k3", "k5"]
    assert "GPU 1 of [0, 1]" in one.notes
    zero = audit.from_torch(doc, device=0)
    assert zero.gpu.sm_count == 132 and sorted(x.name for x in zero.in_steps) == ["k2", "k4", "k6", "k7"]
    with pytest.raises(audit.AuditError, match=r"no kernel of the trace ran on GPU 2; its kernels ran on \[0, 1\]"):
        audit.from_torch(doc, device=2)


def test_events_that_are_not_objects_are_skipped_and_counted():
    doc = profiler_steps()
    doc["traceEvents"] += [5, "x", None]
    t = audit.from_torch(doc)
    assert len(t.in_steps) == 6 and "3 trace events that are not objects were skipped" in t.notes


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "launchlab", "audit", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_every_bad_input_is_one_line_and_exit_2_never_a_traceback(tmp_path):
    good = tmp_path / "t.json.gz"
    good.write_bytes(gzip.compress(json.dumps(profiler_steps()).encode()))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(good.read_bytes()[:60])
    amd = tmp_path / "amd.json"
    amd.write_text(json.dumps({**profiler_steps(), "deviceProperties": [{"id": 0, "name": "AMD Radeon Graphics",
                                                                         "computeMajor": 9, "computeMinor": 0}]}))
    cases = [((tmp_path,), "is a directory: give the trace file in it"),
             ((cut,), "is not a JSON record (plain or gzipped): truncated or damaged gzip"),
             ((amd,), "was recorded on an AMD GPU (ROCm)"),
             ((good, "--mark", "nothing"), "no range named 'nothing*'"),
             ((good, "--top", "0"), "--top takes how many rows to show (1 or more), got 0"),
             ((good, "--top", "-1"), "--top takes how many rows to show (1 or more), got -1"),
             ((good, "--device", "3"), "no kernel of the trace ran on GPU 3")]
    for args, words in cases:
        r = _cli("--trace", *args)
        assert r.returncode == 2 and "Traceback" not in r.stderr + r.stdout, (args, r.stderr[-800:])
        assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    r = _cli("--trace", good)
    assert r.returncode == 0 and "3 step(s) from torch.profiler" in r.stdout
    assert "note: 2 kernels launched outside every step are left out" in r.stdout


def test_every_option_of_audit_says_what_it_does():
    import argparse
    from launchlab.__main__ import parser
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["audit"]
    opts = {a.option_strings[-1]: a.help for a in sub._actions if a.option_strings and a.dest != "help"}
    assert {"--trace", "--steps", "--mark", "--device", "--top", "--csv", "--json", "--by"} <= set(opts)
    assert {o: h for o, h in opts.items() if not h or len(h.split()) < 3} == {}


def test_calls_per_step_keep_one_decimal_where_fractional():
    """Six launches of one shape over 3 steps are 2 a step; four over 3 are 1.3 (not rounded to 1)."""
    from launchlab.audit import shapes
    doc = profiler_steps()
    for e in doc["traceEvents"]:
        if e["cat"] == "kernel":
            e["name"] = "same"
    t = audit.from_torch(doc)
    row = next(ln for ln in shapes.lines(audit.table(t), t.steps) if ln.startswith("same"))
    assert row.split()[3] == "2"
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("args", {}).get("correlation") not in (3, 5)]
    t = audit.from_torch(doc)
    row = next(ln for ln in shapes.lines(audit.table(t), t.steps) if ln.startswith("same"))
    assert row.split()[3] == "1.3"


# ------------------------------------------------------------------ streams and communication
def two_streams() -> dict:
    """One marked step (GPU range 0-1,000 µs): compute A (grid 4) at 100-300 and B (grid 264) at 400-500 on
    stream 7, an NCCL all-reduce (grid 2) at 150-650 on stream 20, beside both."""
    ev = [cpu_range(audit.STEP_MARK, 0, 1000, cat="gpu_user_annotation")]
    for name, ts, dur, grid, stream in (("gemv_a", 100, 200, (4, 1, 1), 7), ("gemv_b", 400, 100, (264, 1, 1), 7),
                                        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 150, 500, (2, 1, 1), 20)):
        k = kernel(ts, 0, name=name, grid=grid)
        k["dur"], k["args"]["stream"] = dur, stream
        ev.append(k)
    return {"traceEvents": ev, "deviceProperties": [H200]}


def test_a_steps_time_is_its_wall_span_beside_the_summed_kernel_time_and_their_overlap():
    from launchlab.audit import shapes
    t = audit.from_torch(two_streams())
    (st,) = shapes.step_times(t)
    # wall: 100 -> 650; summed: 200 + 100 + 500 = 800; busy: [100, 650] = 550; overlap 800 - 550 = 250
    assert (st.wall_us, st.kernel_us, st.busy_us, st.overlap_us) == (550.0, 800.0, 550.0, 250.0)
    line = shapes.time_line(t)
    assert " ".join(line.split()) == ("per step: 550.0 µs of wall time from the first kernel's start to the last one's "
                                      "end; 800.0 µs of kernel time summed over the streams, 250.0 µs of it beside "
                                      "another kernel")
    assert max(map(len, line.splitlines())) <= 110 and len(line.splitlines()) == 2


def test_communication_kernels_are_ranked_apart_and_leave_the_idle_share_alone():
    from launchlab.audit import shapes
    t = audit.from_torch(two_streams())
    rows = audit.table(t)
    assert {r.kernel: r.kind for r in rows} == {"gemv_a": "compute", "gemv_b": "compute",
                                                "ncclDevKernel_AllReduce_Sum_f32_RING_LL": "communication"}
    assert [r.kernel for r in shapes.ranking(rows)] == ["gemv_a", "gemv_b"]       # idle 200 x 128/132, then 0
    assert [r.kernel for r in shapes.ranking(rows, kind="communication")] == ["ncclDevKernel_AllReduce_Sum_f32_RING_LL"]
    assert shapes.idle_share(rows) == pytest.approx(200 / 300)          # of compute time only: gemv_a is under half
    text = shapes.text(t, rows)
    said = " ".join(text.split())
    assert "communication, 500.0 µs per step -- communication kernels are ranked apart" in said
    assert text.index("gemv_b") < text.index("communication, 500.0") < text.index("ncclDevKernel")
    assert max(map(len, text.splitlines())) <= 110
    j = json.loads(shapes.to_json(t, rows))
    assert j["communication_us_per_step"] == 500.0 and j["step_times"] == [
        {"step": 0, "wall_us": 550.0, "kernel_us": 800.0, "overlap_us": 250.0}]
    assert {r["kernel"]: r["kind"] for r in j["rows"]}["ncclDevKernel_AllReduce_Sum_f32_RING_LL"] == "communication"


@pytest.mark.parametrize("name, want", [
    ("ncclKernel_AllGather_RING_LL_Sum_int8_t", ("communication", "NCCL (its name holds 'nccl')")),
    ("void ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
     ("communication", "NCCL (its name holds 'nccl')")),
    ("void deep_ep::intranode::dispatch<8, 768>(int4*, float*)", ("communication", "DeepEP (its name holds 'deep_ep::')")),
    ("nvshmemi_proxy_progress", ("communication", "NVSHMEM (its name holds 'nvshmem')")),
    ("uncclear_gemv", ("compute", "")),                           # 'nccl' inside a word is not NCCL
    ("gemv_kernel", ("compute", "")),
])
def test_a_kernel_is_told_communication_by_its_librarys_name_at_a_words_start(name, want):
    from launchlab.audit import shapes
    assert shapes.kind_of(name) == want


def test_the_time_line_is_the_median_step_or_the_unmarked_record_shared_by_its_steps():
    from launchlab.audit import shapes
    t = audit.from_torch(profiler_steps())       # each step: two 5 µs kernels 40 µs apart (e.g. 320-325, 360-365)
    assert [(s.step, s.wall_us, s.kernel_us, s.overlap_us) for s in shapes.step_times(t)] == [
        (0, 45.0, 10.0, 0.0), (1, 45.0, 10.0, 0.0), (2, 45.0, 10.0, 0.0)]
    assert " ".join(shapes.time_line(t).split()).startswith("per step: 45.0 µs of wall time") and \
        "10.0 µs of kernel time summed over the streams, 0.0 µs of it beside" in " ".join(shapes.time_line(t).split())
    doc = profiler_steps()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep")]
    u = audit.from_torch(doc, steps=2)           # all eight kernels, 210 -> 655: 445 µs, 40 µs summed, over 2 steps
    (s,) = shapes.step_times(u)
    assert (s.step, s.wall_us, s.kernel_us) == (None, 445.0, 40.0)
    assert " ".join(shapes.time_line(u).split()).startswith("per step: 222.5 µs of wall time")
    assert "20.0 µs of kernel time summed" in " ".join(shapes.time_line(u).split())


# ------------------------------------------------------------------ names that tell rows apart
def test_a_mangled_name_is_read_as_its_function():
    from launchlab.audit import shapes
    assert shapes.demangle_head("_ZN8internal5gemvx6kernelIii13__nv_bfloat16fffLb1EEEvT3_") == "internal::gemvx::kernel"
    assert shapes.demangle_head("_Z8kda_walkILi0ELb0EEvPKfS1_") == "kda_walk"
    assert shapes.demangle_head("_ZN7cutlass13device_kernelIN2at4cuda6detailEEEvv") == "cutlass::device_kernel"
    assert shapes.demangle_head("gemv_kernel") == "gemv_kernel"
    assert shapes.short("_Z8kda_walkILi0ELb0EEvPKfS1_") == "kda_walk"


def test_a_short_name_keeps_the_function_and_cuts_from_the_left():
    from launchlab.audit import shapes
    name = "void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<at::native::(anonymous " \
           "namespace)::OpaqueType<2u>, unsigned int, 4, 128, 1, 16>(int*)"
    assert shapes.short(name, 80) == "at::native::{anonymous}::CatArrayBatchedCopy_vectorized"   # not 'at::native::'
    assert shapes.short(name, 34) == "…" + "{anonymous}::CatArrayBatchedCopy_vectorized"[-33:]
    assert len(shapes.short(name, 34)) == 34 and shapes.short(name, 34).endswith("BatchedCopy_vectorized")


def test_no_two_kernels_share_a_short_name():
    from launchlab.audit import shapes
    a = ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
         "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}> >(int, T1)")
    b = ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::(anonymous "
         "namespace)::masked_fill_kernel(at::TensorIteratorBase&)> >(int, T1)")
    c = "void at::native::reduce_kernel<512, 1>(int)"
    d1 = "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x256_1x4x1_cga1x1x1_kernel0_0"
    d2 = "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0"
    got = shapes.short_names([a, b, c, d1, d2], 40)
    assert got[c] == "at::native::reduce_kernel"                      # alone: its plain short name
    # at::native::elementwise_kernel<direct_copy_kernel_cuda> is 55 characters: cut from the left to 40
    assert got[a] == "…" + "at::native::elementwise_kernel<direct_copy_kernel_cuda>"[-39:]
    assert got[b].endswith("<masked_fill_kernel>")
    assert got[d1] != got[d2] and len({*got.values()}) == 5 and max(map(len, got.values())) <= 40
    same = shapes.short_names(["void k<1>(int)", "void k<2>(int)"], 40)     # nothing but numbers differ
    assert same == {"void k<1>(int)": "k #1", "void k<2>(int)": "k #2"}


def test_every_row_of_the_three_models_tables_has_its_own_name():
    from launchlab.audit import shapes
    for f in ("llama", "deepseek_v3", "qwen3_next"):
        t = audit.load(ROOT / "data" / "audit" / f"{f}.trace.json.gz")
        names = {r.kernel for r in audit.table(t)}
        got = shapes.short_names(names, 40)
        assert len(set(got.values())) == len(names), f
        assert not [s for s in got.values() if s.endswith("::")]                # never 'at::native::'


def test_the_idle_share_counts_launches_below_half_the_sms_and_not_one_at_half():
    """Three compute shapes on 132 SMs: 65 blocks (below half, 30 µs), exactly 66 (half, 10 µs: not below), 132 (60
    µs); and a collective of 2 blocks, which is never counted. Below half: 30 of 100 µs of compute time."""
    import dataclasses

    from launchlab.audit import shapes
    (base,) = [r for r in audit.table(audit.from_torch(two_streams())) if r.kernel == "gemv_a"]
    rows = [dataclasses.replace(base, kernel=f"k{b}", blocks=b, us_per_step=us)
            for b, us in ((65, 30.0), (66, 10.0), (132, 60.0))]
    rows.append(dataclasses.replace(base, kernel="ncclDevKernel_AllReduce", blocks=2, us_per_step=500.0))
    assert base.sm_count == 132
    assert shapes.idle_share(rows) == pytest.approx(0.30)
    assert shapes.idle_share(rows, below=66 / 132 + 1e-9) == pytest.approx(0.40)     # just past half: 66 counts
    assert shapes.idle_share(rows[3:]) == 0.0                                         # no compute time at all


def test_a_gpu_step_holds_the_kernels_that_start_and_end_inside_it():
    """A GPU-side step range 100-200 µs: a kernel at 150-155 is in it, one at 198-203 runs past its end and one
    at 200-205 starts at its end -- both left out, and the note counts them (every time is exact in binary)."""
    ev = [cpu_range(audit.STEP_MARK, 100, 100, cat="gpu_user_annotation"),
          kernel(150, 1, name="inside"), kernel(198, 2, name="runs_past"), kernel(200, 3, name="at_the_end")]
    t = audit.from_torch({"traceEvents": ev, "deviceProperties": [H200]})
    assert {x.name: x.step for x in t.launches} == {"inside": 0, "runs_past": None, "at_the_end": None}
    assert [x.name for x in t.in_steps] == ["inside"]
    assert "2 kernels launched outside every step are left out" in t.notes
