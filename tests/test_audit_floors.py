"""Step 4 of the audit (launchlab.audit.floors), live on the H200 (`-m gpu`): ncu run on a program's offenders only,
its marked steps only, the bytes it counts, the floor against the copy ceiling measured now, and the verdict -- or,
where ncu cannot give one, no floor and the reason. The probe kernel's bytes are known apart from ncu (it reads a
64 MiB buffer once per call), so ncu's count is checked against arithmetic, not against itself."""
import subprocess
import sys
import textwrap

import pytest

from launchlab import audit

pytestmark = pytest.mark.gpu

MIB64 = 64 << 20
PROGRAM = textwrap.dedent(r'''
    import sys
    import cupy as cp
    from launchlab import audit
    SRC = r"""extern "C" __global__ void launchlab_floor_probe(const float4* x, float* out, long long n) {
        float s = 0.f;
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
             i += (long long)gridDim.x * blockDim.x) { float4 v = x[i]; s += v.x + v.y + v.z + v.w; }
        out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    }"""
    k = cp.RawKernel(SRC, "launchlab_floor_probe")
    blocks, steps = int(sys.argv[1]), int(sys.argv[2])
    n = (64 << 20) // 16
    x = cp.ones(n * 4, cp.float32)
    out = cp.zeros(blocks * 256, cp.float32)
    for _ in range(3):                                   # warm-up: outside the steps, never profiled by ncu
        k((blocks,), (256,), (x, out, cp.int64(n)))
    for _ in range(steps):
        with audit.step():
            k((blocks,), (256,), (x, out, cp.int64(n)))
    cp.cuda.Device().synchronize()
    assert float(out[:blocks * 256].sum()) == n * 4
    if len(sys.argv) > 3:
        raise SystemExit(sys.argv[3])
''')


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    p = tmp_path_factory.mktemp("floors") / "step.py"
    p.write_text(PROGRAM)
    return p


@pytest.fixture(scope="module")
def ref():
    from launchlab.audit import floors
    r = floors.reference()
    assert 3.0 < r.copy_tbs < 5.0 and 0.3 < r.launch_us < 5.0, r       # H200: 4.8 TB/s peak, ~4.2 measured
    return r


def rows_of(program, blocks: int, steps: int):
    from launchlab.audit import profilers
    t = profilers.run_script(["python", str(program), str(blocks), str(steps)], tool="cupti")
    rows = [r for r in audit.table(t) if r.kernel == "launchlab_floor_probe"]
    assert len(rows) == 1 and rows[0].calls == 3 + steps and rows[0].grid == (blocks, 1, 1)
    return rows, t


def test_four_blocks_over_64_mib_starve_and_ncu_counts_the_bytes_of_the_marked_steps_only(program, ref):
    from launchlab.audit import floors
    rows, t = rows_of(program, 4, 12)
    f, = floors.measure([sys.executable, str(program), "4", "12"], rows, ref.copy_tbs, ref.launch_us)
    assert f.calls == 12                                  # the 3 warm-up calls are outside audit.step(): not profiled
    assert f.has_floor and f.bytes_per_call == pytest.approx(MIB64, rel=0.02)   # read once; 4 KiB written
    assert f.floor_us == pytest.approx(MIB64 / (ref.copy_tbs * 1e6) + ref.launch_us, rel=0.02)
    assert f.verdict == "starvation" and f.ratio > 10 and len(f.cold_us) == 12
    assert any("4 blocks" in e or "4 of 132" in e for e in f.evidence), f.evidence
    assert "STARVATION" in f.line() and "cold median" in f.line()


def test_the_same_kernel_over_the_whole_machine_sits_at_its_floor(program, ref):
    from launchlab.audit import floors
    rows, t = rows_of(program, 132 * 8, 10)
    f, = floors.measure([sys.executable, str(program), str(132 * 8), "10"], rows, ref.copy_tbs, ref.launch_us)
    assert f.calls == 10 and f.bytes_per_call == pytest.approx(MIB64, rel=0.02)
    assert f.verdict == "bandwidth-bound" and f.ratio < floors.diagnosis.NEAR_FLOOR, f.line()


def test_too_few_calls_a_failing_program_and_a_missing_ncu_give_no_floor_and_say_why(program, ref):
    from launchlab.audit import floors
    rows, _ = rows_of(program, 4, 12)
    few, = floors.measure([sys.executable, str(program), "4", "6"], rows, ref.copy_tbs, ref.launch_us)
    assert few.calls == 6 and not few.has_floor and "measured 6 calls of it; a floor and a spread need 10" in \
        few.evidence[0]
    bad, = floors.measure([sys.executable, str(program), "4", "12", "the step broke"], rows, ref.copy_tbs)
    assert not bad.has_floor and "exited with status 1" in bad.evidence[0], bad.evidence
    gone, = floors.measure([sys.executable, str(program), "4", "12"], rows, ref.copy_tbs, ncu="no-such-ncu")
    assert not gone.has_floor and "not on PATH" in gone.evidence[0] and "no floor" in gone.line()


def test_ncus_own_error_line_is_read_as_a_refusal(tmp_path):
    from launchlab.audit import floors
    log = tmp_path / "ncu.log"
    p = subprocess.run(["ncu", "--page", "launchlab_no_such_page", "--log-file", str(log),
                        sys.executable, "-c", "import cupy as cp; (cp.ones(4) + 1).sum()"],
                       capture_output=True, text=True, timeout=300)
    text = (log.read_text() if log.exists() else "") + p.stdout + p.stderr
    print(text)
    why = floors.refusal(text)
    assert why is not None and p.returncode != 0
    with pytest.raises(audit.AuditError, match="ncu refused"):
        floors.parse(text)
    q = subprocess.run(["ncu", sys.executable, "-c", "import cupy as cp; (cp.ones(4) + 1).sum(); raise SystemExit(3)"],
                       capture_output=True, text=True, timeout=300)
    print(q.stdout, q.stderr)
    said = q.stdout + q.stderr
    assert floors.refusal(said) is None and floors.program_failed(said, q.returncode) == 3


def test_the_cli_prints_step_4_for_the_top_offender(program):
    r = subprocess.run([sys.executable, "-m", "launchlab", "audit", "--tool", "cupti", "--floors", "1", "--",
                        "python", str(program), "4", "12"], capture_output=True, text=True, timeout=600)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "step 4 for the top 1" in out and "TB/s (the copy ceiling, measured now)" in out
    assert "launchlab_floor_probe grid 4x1x1 block 256x1x1: STARVATION" in out
