"""Every kernel compiles for sm_90 with NVRTC on this machine (no GPU), and its resources and SASS are read."""
import pytest

from launchlab import kernels

# The resource report is parsed from ptxas -v in the log of the NVRTC the course pins (13.5). The H200 image
# carries an older NVRTC whose log has no ptxas lines; there live code reads the driver's attributes instead.
needs_pinned_nvrtc = pytest.mark.skipif(kernels.nvrtc_version() < (13, 5),
                                        reason="offline resource report needs the pinned NVRTC 13.5")


def test_every_source_is_a_registered_family():
    assert set(kernels.all_families()) == set(kernels.FAMILIES), \
        "every kernels/*.cu must be listed in launchlab.kernels.FAMILIES (and vice versa)"


@needs_pinned_nvrtc
@pytest.mark.parametrize("family", sorted(kernels.FAMILIES))
def test_compiles_offline_for_sm90(family):
    b = kernels.compile_offline(family)
    assert b.cubin[:4] == b"\x7fELF"
    for e in kernels.FAMILIES[family]:
        r = b.resources_of(e)
        assert 1 <= r.registers <= 255


def test_headers_are_hashed_with_their_kernel():
    assert set(kernels.sha256s("stream_read")) == {"stream_read.cu", "common.cuh"}


def test_ptxas_log_parser():
    log = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 16 bytes cumulative stack size, 4096 bytes smem"""
    r = kernels.parse_ptxas_log(log)["k"]
    assert (r.registers, r.smem_static, r.stack_frame, r.spill_stores, r.spill_loads, r.barriers) == \
        (40, 4096, 16, 8, 12, 1)


@needs_pinned_nvrtc
def test_static_smem_and_register_caps_reach_the_cubin():
    b = kernels.compile_offline("occupancy_probe")
    assert b.resources_of("occupancy_probe<32, 8192>").smem_static == 8192
    assert b.resources_of("occupancy_probe<64, 0>").registers == 64
    assert b.resources_of("occupancy_probe<255, 0>").registers == 255


def test_sass_shows_the_load_width_and_loads_in_flight():
    """float4 variants issue 128-bit loads; UNROLL=4 has four independent loads in its loop, UNROLL=1 one."""
    b = kernels.compile_offline("stream_read")
    def ldg(e):
        return [o for o in kernels.sass_instructions(b.sass(e)) if o.startswith("LDG")]
    assert all(".128" in o for o in ldg("stream_read<4, 4>"))
    assert not any(".128" in o for o in ldg("stream_read<1, 1>"))
    # main loop + remainder loop: 4 + 1 loads for UNROLL=4, 1 + 1 for UNROLL=1
    assert len(ldg("stream_read<4, 4>")) == 5 and len(ldg("stream_read<4, 1>")) == 2
