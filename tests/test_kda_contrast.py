"""§3's contrast kernel (kernels/kda_contrast.cu): its shape is pinned -- grid = n_head, 128 threads, one state
column per thread walking its rows serially -- its refusals come before any launch, and its recording carries
the figures the summary reports. The GPU check against the float64 reference is in the self-test
(launchlab/sections/s03_starvation/checks.py: kda-contrast-matches-the-float64-step)."""
import re

import numpy as np
import pytest

from launchlab.core import compiler, sass, sources
from launchlab.kernels import kda_contrast, kda_decode
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s03_starvation import contrast


@pytest.mark.parametrize("n_head", [12, 24, 96])
def test_the_shape_is_the_lectures(n_head):
    p = kda_contrast.plan(n_head)
    assert p.grid == (n_head,) and p.blocks == n_head          # grid = n_head: one block per head
    assert p.block == 128 == kda_decode.V                       # 128 threads ...
    assert p.columns_per_thread == 1                            # ... one state column each
    assert p.rows_walked == kda_decode.K == 128                 # walked row by row
    assert p.bytes_moved() == kda_decode.bytes_moved(n_head, 128, "store")   # main's bytes: the same floor


def test_the_source_gives_each_thread_one_column_and_walks_the_rows():
    src = sources.source_path("kda_contrast").read_text()
    assert re.search(r"const int j = threadIdx\.x;", src)        # the thread's index is its column
    assert re.search(r"const int h = blockIdx\.x;", src)         # the block's index is its head
    assert src.count("#pragma unroll 1") == 2                    # two serial walks, never unrolled


def test_the_machine_code_walks_serially_with_no_warp_reduction():
    text = compiler.compile_offline("kda_contrast").sass("kda_column")
    ops = sass.sass_instructions(text)
    assert not any(o.startswith("SHFL") for o in ops)            # no shuffle tree: a thread sums alone
    loops = sass.loop_bodies(text)
    assert [lp.global_loads for lp in loops] == [3, 3]           # per row: the state (or staged row) and two of g, k, q
    assert not any(o.startswith("LDG.E.128") for o in ops)       # scalar loads: a row at a time


@pytest.mark.parametrize("bad,match", [(dict(n_head=0), "positive"), (dict(n_head=12, v=64), "V = 128"),
                                       (dict(n_head=True), "positive"), (dict(n_head=70000), "65535")])
def test_refused_before_launch(bad, match):
    with pytest.raises(kda_contrast.ContrastError, match=match):
        kda_contrast.plan(**bad)


def test_it_shares_mains_reference_and_inputs():
    assert kda_contrast.reference is kda_decode.reference
    h = kda_contrast.inputs(12)
    assert h["state"].shape == (12, 128, 128)


def test_the_recording_meets_the_issue_and_reads_as_starvation():
    d = contrast.recorded()
    ceil = bandwidth.CEILING.recorded()
    head = contrast.headline(d, ceil)
    assert head["contrast_kernel_ratio"] >= 60                   # the lecture's regime: >= 60x its cold floor
    assert head["contrast_kernel_spread_pct"] <= 2               # ... repeatable
    assert head["contrast_kernel_starvation"]
    assert head["contrast_over_main_cold_x"] > 1.5                 # same geometry, a longer body: slower
    assert d.cold.l2 == "cold" and d.main_cold.l2 == "cold" and d.hot.l2 == "hot"
    assert d.cold.n >= 10 and d.rel_err_o < 1e-5 and d.rel_err_state < 1e-5
    assert (d.grid, d.block, d.rows_walked) == (12, 128, 128)


def test_the_table_states_both_ratios_and_which_floor():
    d = contrast.recorded()
    t = contrast.table(d, bandwidth.CEILING.recorded().tbs)
    assert "96.7" in t and "lecture" in t and "copy ceiling" in t and "robust" in t
    assert np.isfinite(contrast.headline(d, bandwidth.CEILING.recorded())["contrast_kernel_ratio"])
