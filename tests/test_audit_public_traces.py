"""The audit on traces nobody here recorded (issue 57): a V100 training run and an AMD MI250 run, copied unchanged
from Holistic Trace Analysis' test data (tests/data/traces/README.md names each). Every expected figure below is
read from the raw JSON or worked by hand from NVIDIA's published sm_70 limits, not from the code under test."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from launchlab import audit
from launchlab.audit import shapes
from launchlab.core import hardware, occupancy

TRACES = Path(__file__).parent / "data" / "traces"
V100 = TRACES / "hta_v100_ns_resolution.trace.json.gz"
MI250 = TRACES / "hta_mi250_rocm.trace.json.gz"
RANGES = TRACES / "hta_a100_cupti_range_profiler.trace.json.gz"


@pytest.fixture(scope="module")
def raw() -> dict:
    return json.loads(gzip.decompress(V100.read_bytes()))


@pytest.fixture(scope="module")
def v100():
    return audit.load(V100)


def test_a_v100_trace_is_audited_with_the_v100s_own_limits(v100):
    g = v100.gpu
    assert (g.name, g.sm_count, g.compute_capability) == ("Tesla V100-SXM2-32GB", 80, (7, 0))
    # Volta: 96 KiB of shared memory per SM, all of it one block's with opt-in, and no 1 KiB kept per block
    assert (g.smem_per_sm, g.smem_per_block_optin, g.reserved_smem_per_block) == (98304, 98304, 0)
    assert (g.max_threads_per_sm, g.max_blocks_per_sm) == (2048, 32)


def test_a_row_worked_by_hand_on_the_v100(v100, raw):
    """cuDNN's 128x64 convolution tile at grid 784: 128 threads, 128 registers, 32 KiB of shared memory. Shared
    memory: 96 KiB / 32 KiB = 3 blocks (with a 1 KiB reserve, as from sm_80 on, 33 KiB each: 2). Registers:
    128 x 32 = 4,096 per warp, 4 warps = 16,384 per block, 65,536 / 16,384 = 4. Warps: 64 / 4 = 16. So 3, by
    shared memory; 784 / 80 = 9.8 blocks per SM. Kineto's own estimate (CUDA's calculator on the V100) is
    min(3, 9.8) x 128 / 2048 = 18.75 %, which the trace rounds to 19."""
    name = "cudnn_infer_volta_scudnn_128x64_stridedB_interior_nn_v1"
    ev = [e for e in raw["traceEvents"] if e.get("cat") == "kernel" and e["name"] == name
          and e["args"]["grid"] == [784, 1, 1]]
    assert {e["args"]["est. achieved occupancy %"] for e in ev} == {19}
    row = next(r for r in shapes.table(v100) if r.kernel == name and r.grid == (784, 1, 1))
    assert (row.threads, row.registers, row.smem, row.resident, row.limiter) == \
        (128, 128, 32768, 3, ("shared memory",))
    assert row.calls == len(ev) == 20 and not row.disagreements


def test_kinetos_occupancy_agrees_with_ours_on_every_row_of_the_v100_trace(v100):
    """CUDA's own occupancy calculator ran on the V100 when Kineto wrote each kernel's estimate: where blocks per
    SM exceed the resident blocks, that estimate depends on our resident count, and it agrees on every row."""
    rows = shapes.table(v100)
    over = [r for r in rows if r.blocks / r.sm_count > r.resident > 0]
    assert len(rows) == 192 and len(over) >= 100
    assert [d for r in rows for d in r.disagreements if "occupancy" in d] == []
    assert any("shared memory" in r.limiter for r in over)       # the reserve's rows are among them


def test_the_reserve_before_sm_80_is_what_makes_them_agree(monkeypatch):
    """The complement: with sm_80's 1 KiB per block on the V100, the trace's own estimates disagree."""
    monkeypatch.setattr(hardware, "RESERVED_FROM", (7, 0))
    rows = shapes.table(audit.load(V100))
    assert sum(1 for r in rows if any("occupancy" in d for d in r.disagreements)) >= 5


def test_steps_and_time_of_the_v100_trace_from_its_raw_events(v100, raw):
    ev = raw["traceEvents"]
    steps = sorted((e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
    assert [e["name"] for e in steps] == [f"ProfilerStep#{n}" for n in range(101, 106)]
    launch = {e["args"]["correlation"]: e["ts"] for e in ev
              if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    inside = [[k for k in ev if k.get("cat") == "kernel" and s["ts"] <= launch.get(k["args"]["correlation"], -1)
               <= s["ts"] + s["dur"]] for s in steps]
    st = shapes.step_times(v100)
    assert [s.step for s in st] == [0, 1, 2, 3, 4] and v100.steps == 5
    for s, ks in zip(st, inside):
        assert s.kernel_us == pytest.approx(sum(k["dur"] for k in ks), abs=1e-6)
        # one stream: nothing ran beside anything, to the trace's last digit (as floats of µs since the epoch,
        # 0.25 µs coarse, the intervals overlapped by 1 to 6 µs a step)
        assert {k["args"]["stream"] for k in ks} == {7} and s.overlap_us < 1e-6
        assert s.busy_us == pytest.approx(s.kernel_us, abs=1e-6)
    line = " ".join(shapes.time_line(v100).split())
    mean = sum(s.kernel_us for s in st) / 5
    assert f"{mean:,.1f} µs of kernel time summed" in line and "0.0 µs of it beside" in line
    assert f"{sum(r.us_per_step for r in shapes.table(v100)):,.1f}" == f"{mean:,.1f}"   # the table's per-step time


def test_kernel_times_keep_the_traces_own_digits(v100):
    """Kineto writes µs since the epoch with three decimals (1712195495505583.123); a float of that size is 0.25 µs
    coarse. The audit's times count from the trace's first whole µs and keep every digit."""
    from decimal import Decimal
    doc = json.loads(gzip.decompress(V100.read_bytes()), parse_float=Decimal)
    ks = sorted((e for e in doc["traceEvents"] if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    origin = int(ks[0]["ts"])
    assert any(Decimal(k["ts"]) % 1 not in (0, Decimal("0.25"), Decimal("0.5"), Decimal("0.75")) for k in ks)
    got = sorted(x.start_us for x in v100.launches)
    assert got == [float(Decimal(k["ts"]) - origin) for k in ks]


def test_an_amd_trace_is_refused_by_name_though_it_reports_9_0():
    doc = json.loads(gzip.decompress(MI250.read_bytes()))
    assert {(p["computeMajor"], p["computeMinor"]) for p in doc["deviceProperties"]} == {(9, 0)}
    with pytest.raises(audit.AuditError, match=r"AMD GPU \(ROCm\).*NVIDIA GPUs only"):
        audit.load(MI250)


@pytest.mark.parametrize("cc, block, smem, expect", [
    ((7, 0), 128, 48 * 1024, 2),        # V100: 96 / 48 = 2 (a 1 KiB reserve would make it 1)
    ((7, 0), 128, 96 * 1024, 1),        # the whole SM's shared memory, one block: no reserve before sm_80
    ((7, 5), 128, 64 * 1024, 1),        # T4: 64 KiB opt-in is the whole SM
    ((7, 5), 256, 0, 4),                # T4: 1,024 threads per SM / 256
    ((7, 5), 32, 0, 16),                # T4: its 16-block cap binds before its 32 warps
    ((8, 0), 128, 48 * 1024, 3),        # A100: 164 KiB / (48 + 1) KiB = 3.3
])
def test_the_calculator_on_volta_and_turing_worked_by_hand(cc, block, smem, expect):
    gpu = hardware.for_arch("x", 40, cc)
    assert occupancy.occupancy(block, 32, smem, gpu).blocks_per_sm == expect


@pytest.mark.parametrize("cc, smem", [((7, 0), 96 * 1024 + 1), ((7, 5), 64 * 1024 + 1), ((8, 0), 163 * 1024 + 1)])
def test_a_block_one_byte_over_the_opt_in_limit_cannot_launch(cc, smem):
    gpu = hardware.for_arch("x", 40, cc)
    assert occupancy.occupancy(128, 32, smem, gpu).blocks_per_sm == 0


def test_a_range_profiler_trace_is_told_what_it_holds_and_how_to_record_one():
    """An A100 trace of CUPTI's range profiler: 77 `cuda_profiler_range` events (FLOP counters per kernel), no
    kernel activity. It used to be told it launched nothing."""
    doc = json.loads(gzip.decompress(RANGES.read_bytes()))
    assert not [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "Kernel")]
    assert sum(e.get("cat") == "cuda_profiler_range" for e in doc["traceEvents"]) == 77
    with pytest.raises(audit.AuditError, match=r"CUPTI range-profiler events .*ProfilerActivity\.CUDA\]"):
        audit.load(RANGES)


def _mtia_like(tmp_path, late: bool, kernels: bool):
    """An MTIA-shaped trace (no deviceProperties, `mtia_*` categories; Holistic Trace Analysis' 87 MB one has
    its first mtia event after 100,000 others)."""
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": i, "dur": 1} for i in range(120_000 if late else 3)]
    ev.append({"ph": "X", "cat": "mtia_runtime", "name": "launch", "ts": 5, "dur": 1})
    if kernels:
        ev.append({"ph": "X", "cat": "kernel", "name": "k", "ts": 6, "dur": 1,
                   "args": {"device": 0, "grid": [1, 1, 1], "block": [32, 1, 1]}})
    p = tmp_path / "mtia.json"
    p.write_text(json.dumps({"traceEvents": ev, "deviceProperties": []}))
    return p


def test_an_mtia_trace_is_refused_by_name_before_it_is_parsed(tmp_path, monkeypatch):
    parsed = []
    real = json.loads
    monkeypatch.setattr(audit.launches.json, "loads", lambda *a, **k: parsed.append(1) or real(*a, **k))
    with pytest.raises(audit.AuditError, match="Meta MTIA accelerator"):
        audit.load(_mtia_like(tmp_path, late=True, kernels=False))
    assert parsed == []                                   # no Python objects made of it
    with pytest.raises(audit.AuditError, match="Meta MTIA accelerator"):   # past the first 100,000 events too
        audit.launches.from_torch(real(_mtia_like(tmp_path, late=True, kernels=True).read_text()))
