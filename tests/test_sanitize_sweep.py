"""tools/sanitize_sweep.py reads compute-sanitizer's logs: the error count, and each report attributed to the
kernel it names (the course's or a library's). Checked on the committed H200 logs (any machine)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import sanitize_sweep as sweep  # noqa: E402


def test_the_racecheck_log_attributes_every_race_once_and_all_of_them_to_cublas():
    log = (ROOT / "data" / "sanitizer" / "decode_racecheck.txt").read_text()
    per = sweep.attribute(log)
    assert sweep.errors(log) == sum(per.values()) == log.count("Race reported")
    assert per and all(sweep.LIBRARY.search(k) for k in per)


def test_clean_logs_read_zero_and_a_device_frame_names_its_kernel():
    for name in ("decode_synccheck.txt", "decode_memcheck.txt"):
        log = (ROOT / "data" / "sanitizer" / name).read_text()
        assert sweep.errors(log) == 0 and sweep.attribute(log) == {}
    report = ("========= Invalid __global__ read of size 16 bytes\n"
              "=========     at kda_decode<1, false>+0x2b0 in kda_decode.cu:151\n"
              "=========     by thread (3,0,0) in block (0,4,0)\n========= ERROR SUMMARY: 1 error\n")
    assert sweep.attribute(report) == {"kda_decode<1, false>": 1} and sweep.errors(report) == 1
    assert sweep.errors("the run died before its summary") is None
