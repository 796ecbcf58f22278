"""Every kernel compiles for sm_90 with NVRTC on this machine (no GPU), and its resources and SASS are read."""
import pytest

from launchlab import sections
from launchlab.core import compiler, listing, loader, sass, sources
from conftest import need

sections.all()      # the families sections declare in their manifests, beside the course's own

# The resource report is parsed from ptxas -v in the log of the NVRTC the course pins (13.5). The H200 image
# carries an older NVRTC whose log has no ptxas lines; there live code reads the driver's attributes instead.
needs_pinned_nvrtc = pytest.mark.needs("nvrtc")


def test_every_source_is_a_registered_family():
    assert set(sources.all_families()) == set(sources.FAMILIES), \
        "every kernels/*.cu must be listed in launchlab.core.sources.FAMILIES or a section's manifest (and vice versa)"


# the occupancy probe's hundreds of variants take ~40 s to compile offline (once per process): make test-slow
SLOW_FAMILIES = {"occupancy_probe"}


@needs_pinned_nvrtc
@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.slow) if f in SLOW_FAMILIES else f
                                    for f in sorted(sources.FAMILIES)])
def test_compiles_offline_for_sm90(family):
    b = compiler.compile_offline(family)
    assert b.cubin[:4] == b"\x7fELF"
    for e in sources.FAMILIES[family]:
        r = b.resources_of(e)
        assert 1 <= r.registers <= 255


def test_headers_are_hashed_with_their_kernel():
    assert set(sources.sha256s("stream_read")) == {"stream_read.cu", "common.cuh", "timeline.cuh"}
    assert set(sources.sha256s("timeline")) == {"timeline.cu", "timeline.cuh"}


def test_ptxas_log_parser():
    log = """ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 16 bytes cumulative stack size, 4096 bytes smem"""
    r = compiler.parse_ptxas_log(log)["k"]
    assert (r.registers, r.smem_static, r.stack_frame, r.spill_stores, r.spill_loads, r.barriers) == \
        (40, 4096, 16, 8, 12, 1)


@pytest.mark.slow                       # the occupancy probe compiled offline
@needs_pinned_nvrtc
def test_static_smem_and_register_caps_reach_the_cubin():
    b = compiler.compile_offline("occupancy_probe")
    assert b.resources_of("occupancy_probe<32, 8192>").smem_static == 8192
    assert b.resources_of("occupancy_probe<64, 0>").registers == 64
    assert b.resources_of("occupancy_probe<255, 0>").registers == 255


def test_sass_shows_the_load_width_and_loads_in_flight():
    """float4 variants issue 128-bit loads; UNROLL=4 has four independent loads in its loop, UNROLL=1 one."""
    b = compiler.compile_offline("stream_read")
    def ldg(e):
        return [o for o in sass.sass_instructions(b.sass(e)) if o.startswith("LDG")]
    assert all(".128" in o for o in ldg("stream_read<4, 4>"))
    assert not any(".128" in o for o in ldg("stream_read<1, 1>"))
    # main loop + remainder loop: 4 + 1 loads for UNROLL=4, 1 + 1 for UNROLL=1
    assert len(ldg("stream_read<4, 4>")) == 5 and len(ldg("stream_read<4, 1>")) == 2


# ------------------------------------------------------------------ listing.show: the source on the page
def test_show_gives_exactly_the_launched_variant_with_its_helpers():
    s = listing.show("rms_norm", "rms_norm_wide<true>", block=1024)
    text = str(s)
    assert s.bindings == {"VEC": "true"}
    assert "__global__ void rms_norm_wide(" in text and "if (threadIdx.x < REDUCE_THREADS)" in text
    assert "rms_norm_f32" not in text and "rms_norm_wide_reduce" not in text        # other variants left out
    assert "float block_sum(" not in text and "block_sum" in text.split("\n\n", 1)[1].splitlines()[0]
    full = str(listing.show("rms_norm", "rms_norm_wide<true>", helpers=True))      # the shared helpers on request
    assert "float block_sum(" in full and "float warp_sum(" in full                 # from common.cuh
    assert len(text) < len(full)
    assert "#define REDUCE_THREADS 128" in text and "void apply_wide(" in text
    assert "template __global__" not in text                                       # no instantiation lines
    try:
        r = compiler.compile_offline("rms_norm").resources_of("rms_norm_wide<true>")
        assert s.origin.startswith("compiled by NVRTC")
    except sources.KernelError:     # an NVRTC without a ptxas report (the H200 image's): the loaded kernel's
        r = loader.kernel("rms_norm", "rms_norm_wide<true>")
        assert s.origin.startswith("as loaded by the driver")
    assert f"{r.registers} registers/thread" in text and f"{r.smem_static} B static shared memory" in text
    assert "at block 1024:" in text and "blocks/SM" in text
    page = s._repr_html_()                                 # the page: highlighted, the fold below when folded
    assert "<pre" in page and "REDUCE_THREADS" in page and ("<details>" in page) is s.folded


def test_show_binds_every_template_argument_and_keeps_comments():
    s = listing.show("stream_read", "stream_read<1, 4>")
    assert s.bindings == {"VEC": "1", "UNROLL": "4"}
    assert "struct vec_of" in s.code and "lane_sum" in s.code
    assert "// `unroll 1`: the compiler must not unroll" in s.code
    k = listing.show("kda_decode", "kda_decode<2>")
    assert k.bindings == {"MODE": "2"} and "#define KDA_RECOMPUTE_FMA 2" in k.code and "ld_fresh" in k.code


def test_show_refuses_a_variant_the_course_does_not_launch():
    with pytest.raises(sources.KernelError, match="not a variant"):
        listing.show("rms_norm", "rms_norm_wide<int>")
    with pytest.raises(sources.KernelError, match="not a variant"):
        listing.show("nope", "x")


def test_an_empty_nvrtc_log_leaves_the_shared_one_byte_objects_alone():
    """NVRTC writes into the buffer it is handed. With an empty log (size 1: the terminator) a `b" " * n` buffer
    is CPython's shared b" " object, and writing into it turned later single spaces into NULs on Python 3.12
    (notebook outputs on the H200 lost the space between f-string fields). The buffer must be our own."""
    nvrtc = compiler._nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(b'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }', b"k.cu", 0,
                                         [], [])
    try:
        nvrtc.nvrtcCompileProgram(prog, 1, [b"-arch=sm_90"])
        assert nvrtc.nvrtcGetProgramLogSize(prog)[1] == 1          # the case that used to corrupt b" "
        assert compiler._program_log(nvrtc, prog) == ""
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    assert bytes([32]) == b"\x20" and list(b" ") == [32]
    assert eval(compile('f"{1} {2}"', "<cell>", "eval")) == "1 2"


@pytest.mark.slow                       # the occupancy probe compiled offline
def test_a_parted_family_is_every_expression_once_and_compiles_to_the_same_resources():
    """The occupancy probe is compiled as several programs side by side (sources.PARTS): together they hold each
    name expression exactly once, and a variant's registers come out as in a program of its own."""
    split = sources.parts("occupancy_probe")
    assert len(split) == sources.PARTS["occupancy_probe"] > 1
    flat = [e for p in split for e in p]
    assert sorted(flat) == sorted(sources.FAMILIES["occupancy_probe"]) and len(flat) == len(set(flat))
    assert sources.parts("rms_norm") == [sources.FAMILIES["rms_norm"]]
    need("nvrtc")                   # the offline report is parsed from the pinned NVRTC's ptxas log
    b = compiler.compile_offline("occupancy_probe")
    assert len(b.more_cubins) == len(split) - 1 and all(c[:4] == b"\x7fELF" for c in b.more_cubins)
    e = split[-1][-1]                            # a variant that is not in the first part's cubin
    alone = compiler._compile_offline_cached("occupancy_probe", "alone", "sm_90", (e,), ())
    assert b.resources_of(e) == alone.resources_of(e)
    assert b.lowered[e] == alone.lowered[e] and b.lowered[e].encode() not in b.cubin
