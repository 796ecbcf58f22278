"""tools/sanitize_sweep.py reads compute-sanitizer's logs: the error count, and each report attributed to the
kernel it names (the course's or a library's). Checked on the committed H200 logs (any machine)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import sanitize_sweep as sweep  # noqa: E402


def test_the_racecheck_log_attributes_every_race_once_and_all_of_them_to_cublas():
    log = (ROOT / "data" / "sanitizer" / "sweep_decode_racecheck.txt").read_text()
    per = sweep.attribute(log)
    assert sweep.errors(log) == sum(per.values()) == log.count("Race reported")
    assert per and all(sweep.LIBRARY.search(k) for k in per)


def test_clean_logs_read_zero_and_a_device_frame_names_its_kernel():
    for name in ("sweep_decode_synccheck.txt", "sweep_decode_memcheck.txt", "decode_memcheck.txt",
                 "sweep_decode_course_only_initcheck.txt", "sweep_selftest_racecheck.txt"):
        log = (ROOT / "data" / "sanitizer" / name).read_text()
        assert sweep.errors(log) == 0 and sweep.attribute(log) == {}
    report = ("========= Invalid __global__ read of size 16 bytes\n"
              "=========     at kda_decode<1, false>+0x2b0 in kda_decode.cu:151\n"
              "=========     by thread (3,0,0) in block (0,4,0)\n========= ERROR SUMMARY: 1 error\n")
    assert sweep.attribute(report) == {"kda_decode<1, false>": 1} and sweep.errors(report) == 1
    assert sweep.errors("the run died before its summary") is None


def test_a_sanitized_run_must_print_what_the_plain_run_printed():
    plain = "main: 64 launches, PDL on; tokens 7829, logits finite: True\nfixed: 64 launches; tokens 11, logits finite: True\n"
    assert sweep.outcome("decode", "========= COMPUTE-SANITIZER\n" + plain + "========= ERROR SUMMARY: 0 errors") == \
        sweep.outcome("decode", plain) != []
    assert sweep.outcome("decode", plain.replace("7829", "7830")) != sweep.outcome("decode", plain)
    st = "ok   stream_read      err 1.2e-07\nFAIL kda_decode       err 3.0e-01\n1 passed, 1 failed\n"
    assert sweep.outcome("selftest", st) == ["ok stream_read", "FAIL kda_decode", "1 passed, 1 failed"]
    # the messages' numbers may differ, the verdicts may not
    assert sweep.outcome("selftest", st.replace("1.2e-07", "1.3e-07")) == sweep.outcome("selftest", st)


def test_a_frame_with_a_parameter_list_is_named_by_its_kernel_and_the_truncated_count_is_kept():
    # a real H200 log kept as the fixture: initcheck over one decode token on 2026-12-02, before cuBLAS kept the
    # course's zeroed workspace (its 36,208 reports, 100 printed, all in cuBLASLt's split-K reduce)
    log = (ROOT / "tests" / "data" / "sanitizer" / "2026-12-02-decode-initcheck.txt").read_text()
    per = sweep.attribute(log)
    assert per == {"cublasLt::splitKreduce_kernel": 100} and sweep.errors(log) == 36208
    r = sweep.row("decode", "initcheck", True, 0, 1.0, log, {"decode": sweep.outcome("decode", log)}, "x")
    assert r["in_course_kernels"] == 0 and r["in_libraries"] == 100 and r["not_printed"] == 36108
    assert sweep._kernel("kda_decode<1, false>(float const*, int)") == "kda_decode<1, false>"


def test_the_live_profile_covers_every_door_the_recorder_measures():
    import live_profile

    from launchlab.faces import recorder
    doors = {id(d) for ds in recorder.RECORDINGS.values() for d in ds}
    assert doors <= {id(d) for d in live_profile.DOORS.values()}
