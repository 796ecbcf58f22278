"""§11 audit a real model, on CPU against what the H200 recorded: ncu's own CSVs (data/audit/<model>.ncu.csv.gz,
as ncu wrote them) read back and judged again, worked by hand for a row, and the recording's figures recomputed
from its raw reps -- never from the code under test's own summaries."""
import csv
import gzip
import json
import statistics
from pathlib import Path

import pytest

from launchlab.audit import AuditError, floors
from launchlab.core import diagnosis
from launchlab.sections.s11_audit import realmodels

ROOT = Path(__file__).resolve().parent.parent
NCU = ROOT / "data" / "audit"
REC = ROOT / "data" / "recordings" / "section11.json"
MODELS = ("llama", "deepseek_v3", "qwen3_next")


@pytest.fixture(scope="module")
def data():
    return realmodels.recorded()


@pytest.fixture(scope="module")
def raw():
    return json.loads(REC.read_text())["data"]["audit"]


def ncu_text(name: str) -> str:
    return gzip.open(NCU / f"{name}.ncu.csv.gz", "rt").read()


def ncu_rows(name: str) -> list[dict]:
    lines = [ln for ln in ncu_text(name).splitlines() if ln.strip() and not ln.startswith("==")]
    head, *body = list(csv.reader(lines))
    return [dict(zip(head, r)) for r in body[1:]]           # body[0] is the units row


def num(s: str) -> float:
    return float(s.replace(",", ""))


# ------------------------------------------------------------------ ncu's CSV, read back
def test_a_row_of_ncus_csv_worked_by_hand():
    """Llama's third profiled call, as ncu printed it: nvjet 4x12x1 x 384, dram__bytes_read.sum 8,412,416 byte,
    dram__bytes_write.sum 0, gpu__time_duration.sum 6,368 ns; occupancy limits blocks 32, registers 1, shared
    memory 1, warps 5 -> 1 resident block per SM."""
    c = floors.parse(ncu_text("llama"))[2]
    assert (c.kernel, c.grid, c.block) == ("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT", (4, 12, 1), (384, 1, 1))
    assert (c.bytes_read, c.bytes_written, c.bytes) == (8_412_416, 0, 8_412_416)
    assert c.cold_us == pytest.approx(6.368) and c.resident == 1


@pytest.mark.parametrize("name", MODELS)
def test_every_profiled_call_is_read_with_ncus_units(name):
    rows, calls = ncu_rows(name), floors.parse(ncu_text(name))
    assert len(calls) == len(rows) > 0
    for r, c in zip(rows, calls):
        assert c.bytes == num(r["dram__bytes_read.sum"]) + num(r["dram__bytes_write.sum"])     # unit: byte
        assert c.cold_us == pytest.approx(num(r["gpu__time_duration.sum"]) / 1e3)               # unit: ns


def test_the_recorded_floors_are_ncus_csv_judged_again(data):
    """Each offender's floor and verdict follow from the committed CSV alone, through the course's diagnosis."""
    for m in data.models:
        got = floors.judge([f.shape for f in m.floors], floors.parse(ncu_text(m.name)), data.copy_tbs,
                           data.launch_us, others=m.rows)
        for want, f in zip(m.floors, got):
            assert (f.verdict, f.calls) == (want.verdict, want.calls)
            assert f.floor_us == pytest.approx(want.floor_us) and f.cold_us == want.cold_us


def test_cudnns_attention_floor_and_verdict_worked_from_the_csv(data):
    """Llama's cuDNN SDPA kernel at grid (1, 8, 1): the median of its calls' DRAM bytes over the copy ceiling
    plus a launch, against the median of its cold times; far (>= 2.5x), tight (<= 2 %) and on 8 of 132 SMs."""
    mine = [r for r in ncu_rows("llama") if r["Kernel Name"].startswith("cudnn_generated_fort_native_sdpa")]
    assert len(mine) == 12 and {r["Grid Size"] for r in mine} == {"(1, 8, 1)"}
    nbytes = statistics.median(num(r["dram__bytes_read.sum"]) + num(r["dram__bytes_write.sum"]) for r in mine)
    cold = [num(r["gpu__time_duration.sum"]) / 1e3 for r in mine]
    floor = nbytes / (data.copy_tbs * 1e12) * 1e6 + data.launch_us
    q1, _, q3 = statistics.quantiles(cold, n=4, method="inclusive")
    spread = (q3 - q1) / 1.349 / statistics.median(cold)
    assert statistics.median(cold) / floor >= 2.5 and spread <= 0.02 and 8 / 132 < 0.5
    f = next(f for f in data.model("llama").floors if f.shape.grid == (1, 8, 1))
    assert f.verdict == "starvation" and f.floor_us == pytest.approx(floor) and f.spread == pytest.approx(spread)


def test_ncus_refusals_and_a_failed_program_are_errors_not_rows():
    with pytest.raises(AuditError, match="ncu refused: ERR_NVGPUCTRPERM"):
        floors.parse("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                     "permission to access NVIDIA GPU Performance Counters\n")
    with pytest.raises(AuditError, match="exited with status 3"):
        floors.parse("==ERROR== The application returned an error code (3).\n")
    assert floors.refusal("==ERROR== The application returned an error code (1).") is None
    assert floors.program_failed("==ERROR== The application returned an error code (1).", 0) == 1
    assert floors.program_failed("", 2) == 2 and floors.program_failed("", 0) is None
    head = ncu_text("llama").replace("dram__bytes_write.sum", "dram__bytes_written.sum")
    with pytest.raises(AuditError, match="lacks dram__bytes_write.sum"):
        floors.parse(head)
    assert floors.parse("==PROF== Disconnected from process 1\n") == []


def test_function_names_and_ncus_filter():
    assert floors.function("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(T3)") == \
        "reduce_kernel"
    assert floors.function("void (anonymous namespace)::gatherTopK<float, 1>(at::cuda::detail::TensorInfo<T1>)") == \
        "gatherTopK"
    assert floors.function("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT") == \
        "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT"
    assert floors.duration(0.9171) == "917 ns" and floors.duration(1.0) == "1.00 µs"


def test_steps_needed_gives_every_shape_ten_calls_and_at_least_two_steps(data):
    import dataclasses
    row = data.model("llama").rows[0]
    for per_step, want in ((1, 10), (3, 4), (4, 3), (5, 2), (8, 2), (10, 2), (11, 2), (0.5, 20)):
        assert floors.steps_needed([dataclasses.replace(row, calls_per_step=per_step)]) == want, per_step
    mixed = [dataclasses.replace(row, calls_per_step=k) for k in (8, 1, 4)]
    assert floors.steps_needed(mixed) == 10          # the rarest shape decides


def test_offenders_are_the_ranking_s_head_and_bad_counts_are_refused(data):
    rows = data.model("llama").rows
    top = floors.offenders(rows, 5)
    assert [r.key for r in top] == [r.key for r in sorted(rows, key=lambda r: -r.idle_sm_us)[:5]]
    for bad in (0, -1, True, 2.0):
        with pytest.raises(AuditError, match="top must be a positive integer"):
            floors.offenders(rows, bad)
    with pytest.raises(AuditError, match="copy ceiling must be positive"):
        floors.judge(top, [], 0.0)
    few = floors.judge(top, [], 4.2)
    assert all(not f.has_floor and "measured 0 calls" in f.evidence[0] for f in few)


# ------------------------------------------------------------------ the recording's figures, from its raw reps
def test_the_issues_summary_keys(data):
    from launchlab.faces import summary
    a = summary.figures()["audit"]
    assert a["models_audited"] == list(MODELS)
    assert set(a["launch_shapes"]) == set(a["idle_share_of_gpu_time"]) == set(MODELS)
    assert a["offenders_with_floor"] == a["offenders"] == 15
    assert a["cupti_path_kernels"] == 1215 and a["cupti_path_agrees"] is True
    assert 0 < a["user_fix_gain_pct"] < 100 and set(a["user_fix_idle_sm_us_per_step"]) == {"A", "B"}
    # issue 57: every NVIDIA GPU from V100 on, every launch form of today's libraries, the marks the steps came from
    assert a["archs"] == ["sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
    forms = ("cudaLaunchKernelEx", "cudaLaunchKernelExC", "cuLaunchKernelEx", "cutlass::launch_kernel_on_cluster",
             "a macro whose body launches", "CuTe-DSL", "TileLang", "cuTile", "triton def grid(meta)", "<<<>>>")
    assert all(any(f in api for api in a["grep_apis"]) for f in forms), a["grep_apis"]
    assert a["steps_from"] == {**{m: "launchlab.audit.step" for m in MODELS}, "course_decode": "recorder's count"}


def test_the_gain_and_the_idle_share_from_the_raw_recording(raw):
    at = raw["fix"]["at"][0]
    assert at["order"] == "ABBA" * 10 and len(at["a_us"]) == len(at["b_us"]) == 20
    ma, mb = statistics.median(at["a_us"]), statistics.median(at["b_us"])
    h = realmodels.headline(realmodels.recorded())
    assert h["user_fix_gain_pct"] == round(100 * (ma - mb) / ma, 2)
    for m in raw["models"]:
        total = sum(r["us_per_step"] for r in m["rows"])
        idle = sum(r["us_per_step"] for r in m["rows"] if r["blocks"] / r["sm_count"] < 0.5)
        assert h["idle_share_of_gpu_time"][m["name"]] == round(100 * idle / total, 1)
        assert h["launch_shapes"][m["name"]] == len(m["rows"])


def test_the_host_check_says_where_the_time_went(data):
    """What notebook 11 claims from it: torch's choice pays on new KV lengths only; the other backend does not
    care; the GPU's work and idle SM-time barely move between the arms."""
    fix = data.fix
    new, seen, same = (fix.host_check("default", kv) for kv in realmodels.KV_CASES)
    assert new.median_us > 5 * seen.median_us and new.sdpa_cpu_us > 20 * same.sdpa_cpu_us
    other = [fix.host_check(fix.backend, kv).median_us for kv in realmodels.KV_CASES]
    assert max(other) / min(other) < 1.2
    for at in fix.at:
        assert abs(at.b.idle_sm_us / at.a.idle_sm_us - 1) < 0.1 and at.a.us_per_step < 0.05 * min(at.a_us)
    with pytest.raises(KeyError):
        fix.host_check("MATH", "new lengths")


def test_the_cupti_path_agrees_on_every_launch(data):
    c = data.course
    assert c.own.agrees and c.own.matched == c.own.course_launches == 3 * 1215 and c.own.mismatches == []
    assert c.profile.agrees and c.profile.matched_per_step == c.profile.launches_per_step == 1215


def test_a_ranking_table_of_a_model(data):
    text = realmodels.table(data.model("llama"), top=3)
    lines = text.splitlines()
    head = lines[0] + " " + lines[1].strip()                       # the head, wrapped at 110 under its label
    assert lines[0].startswith("Llama-style dense") and "132 SMs" in head and max(map(len, lines)) <= 110
    assert lines[-2].startswith("44 launch shapes, 202 launches") and lines[-1] == "  than half the SMs without a block"
    assert sum(1 for ln in lines if " 384x1x1 " in ln) == 3           # the three nvjet rows (names cut from the left)


def test_the_figures_are_legible(data):
    import matplotlib
    matplotlib.use("Agg")
    from launchlab.core import figure as style
    from launchlab.sections.s11_audit import figures
    for fig in (figures.idle(data, "llama"), figures.floors(data), figures.fix(data), figures.host(data)):
        assert style.legibility(fig) == []
    assert diagnosis.TIGHT == 0.02


# ------------------------------------------------------------------ the CUPTI path against the step profile
@pytest.fixture(scope="module")
def course_doc():
    return json.loads(gzip.open(NCU / "course_decode.cupti.json.gz").read())


@pytest.fixture(scope="module")
def profile():
    from launchlab.sections.s09_lab import lab
    return lab.recorded().profile


def test_the_committed_cupti_record_agrees_with_notebook_09s_step_profile(course_doc, profile):
    from launchlab.audit import crosscheck
    own = [sum(1 for x in step if not x[1].startswith("cublas:")) for step in course_doc["course_log"]]
    want = sum(int(r["calls"]) for r in profile["rows"] if not r["kernel"].startswith("cublas:"))
    a = crosscheck.against_profile(course_doc, profile)
    assert own == [want] * course_doc["steps"] and a.launches_per_step == want
    assert a.agrees and a.matched_per_step == want and a.mismatches == []


def test_a_changed_grid_a_lost_record_and_another_step_are_each_reported(course_doc, profile):
    import copy
    from launchlab.audit import crosscheck
    p = copy.deepcopy(profile)
    row = next(r for r in p["rows"] if r["role"] == "mla.split")          # main's 129 blocks, 47 calls a step
    row["grid"] = [130, 1, 1]
    a = crosscheck.against_profile(course_doc, p)
    assert not a.agrees and a.matched_per_step == a.launches_per_step - 47
    assert any("47 x mla_split at grid [130, 1, 1]" in m and "recorded 0" in m for m in a.mismatches), a.mismatches
    d = copy.deepcopy(course_doc)
    own = [r for r in sorted(d["records"], key=lambda r: r["correlation_id"]) if not r["name"].startswith("nvjet")
           and "gemm" not in r["name"].lower() and "cublas" not in r["name"].lower()]
    d["records"].remove(own[0])
    assert not crosscheck.against_profile(d, profile).agrees
    other = dict(course_doc, preset="fixed")
    with pytest.raises(AuditError, match="not the same step"):
        crosscheck.against_profile(other, profile)
    with pytest.raises(AuditError, match="course launch log"):
        crosscheck.against_profile({k: v for k, v in course_doc.items() if k != "course_log"}, profile)


def test_a_csv_whose_columns_carry_different_units_is_read_column_by_column():
    """ncu picks each column's unit by its values: reads in Mbyte, writes in Kbyte, the time in usecond. 8.4 Mbyte
    read = 8,400,000 B, 12.5 Kbyte written = 12,500 B, 6.37 usecond = 6.37 µs."""
    head = '"Kernel Name","Grid Size","Block Size","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum"'
    units = '"","","","Mbyte","Kbyte","usecond"'
    row = '"k","(4, 12, 1)","(384, 1, 1)","8.4","12.5","6.37"'
    (c,) = floors.parse("\n".join(["==PROF== Connected to process 1", head, units, row]))
    assert (c.bytes_read, c.bytes_written, c.bytes) == (8.4e6, 12.5e3, 8.4e6 + 12.5e3)
    assert c.cold_us == pytest.approx(6.37) and (c.grid, c.block, c.resident) == ((4, 12, 1), (384, 1, 1), None)
    with pytest.raises(AuditError, match="units not understood"):
        floors.parse("\n".join([head, units.replace("Kbyte", "furlong"), row]))


def test_ncu_is_told_to_flush_every_cache_and_leave_the_clocks_alone(data):
    """A floor is compared with a cold time at the clocks the GPU runs: ncu's own defaults are the opposite (it locks
    the base clock), so both flags must be on its command line, each with its value."""
    cmd = floors.command(["python", "step.py"], data.model("llama").rows[:2], "/tmp/ncu.csv")
    pairs = dict(zip(cmd, cmd[1:]))
    assert pairs["--cache-control"] == "all" and pairs["--clock-control"] == "none"
    assert pairs["--profile-from-start"] == "off" and cmd[-2:] == ["python", "step.py"]
    assert set(pairs["--metrics"].split(",")) >= {"dram__bytes_read.sum", "dram__bytes_write.sum",
                                                  "gpu__time_duration.sum"}


def test_the_launches_matched_per_step_are_the_worst_steps(course_doc, profile):
    """One record of the last step moved to another grid: that step matches fewer launches than the profile's, and
    the figure is that step's, not the best one's (a fault in one step of three must not hide)."""
    import copy
    from launchlab.audit import crosscheck
    d = copy.deepcopy(course_doc)
    own = [r for r in sorted(d["records"], key=lambda r: r["correlation_id"])
           if not crosscheck._library(r["name"])]
    own[-1]["grid_x"] += 1
    a = crosscheck.against_profile(d, profile)
    assert a.matched_per_step < a.launches_per_step and not a.agrees
    assert all(m.startswith("step 2:") for m in a.mismatches), a.mismatches


def test_the_headline_counts_only_floors_found_and_agrees_only_when_both_checks_do(data):
    """The recorded audit has 15 offenders, each with a floor. One whose ncu calls were too few has none: 14 of 15.
    The CUPTI path agrees only if the course's own launch log and notebook 09's step profile both agree with it."""
    import dataclasses
    from launchlab.audit import crosscheck
    h = realmodels.headline(data)
    assert (h["offenders"], h["offenders_with_floor"], h["cupti_path_agrees"]) == (15, 15, True)
    m = data.models[0]
    short = dataclasses.replace(m.floors[0], floor_us=None, verdict="no floor", evidence=["ncu measured 9 calls"])
    less = dataclasses.replace(data, models=[dataclasses.replace(m, floors=[short, *m.floors[1:]]), *data.models[1:]])
    assert (realmodels.headline(less)["offenders"], realmodels.headline(less)["offenders_with_floor"]) == (15, 14)
    c = data.course
    off = crosscheck.ProfileAgreement(c.profile.steps, c.profile.shapes, c.profile.launches_per_step,
                                      c.profile.launches_per_step - 1, ["step 2: one launch short"])
    assert realmodels.headline(dataclasses.replace(data, course=dataclasses.replace(c, profile=off)))[
        "cupti_path_agrees"] is False
    own = dataclasses.replace(c.own, mismatches=["step 0: a stranger"])
    assert realmodels.headline(dataclasses.replace(data, course=dataclasses.replace(c, own=own)))[
        "cupti_path_agrees"] is False
