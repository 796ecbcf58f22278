"""The lab's residual add with a planned geometry (launchlab.kernels.residual_add, kernels/residual_add.cu).

The coverage arithmetic is checked against a thread-by-thread simulation of the kernel's index rule; the check
refuses each way a plan goes wrong on each side of its bound; on a GPU the kernel matches numpy's float32 add
bit for bit and a raw launch between guard words counts what the arithmetic predicts."""
import itertools

import numpy as np
import pytest

from launchlab.core import gates, launch
from launchlab.kernels import residual_add as ra

Plan = ra.Plan


def _by_hand(p: Plan, n: int) -> tuple[int, int]:
    """(missed, past_end) of the index rule, thread by thread in plain Python (not the module's code)."""
    written = set()
    for t in range(p.grid * p.block):
        i0 = t * p.ept
        if i0 < n:
            written.update(range(i0, i0 + p.ept))
    return n - len([i for i in written if i < n]), len([i for i in written if i >= n])


@pytest.mark.parametrize("n", [1, 2, 7, 31, 32, 33, 1000, 1001, 7168])
def test_coverage_counts_what_the_index_rule_does_for_every_small_plan(n):
    for grid, block, ept in itertools.product((1, 2, 3, 7, 28, 224), (1, 32, 96, 256), (1, 2, 3, 4, 8)):
        p = Plan(grid, block, ept)
        c = ra.coverage(p, n)
        assert (c.missed, c.past_end) == _by_hand(p, n), (p, n)
        s = ra.simulate(p, n, pad=8)
        assert int(np.sum(s[:n] == 0)) == c.missed and int(np.sum(s[n:] > 0)) == c.past_end
        assert s.max() <= 1                              # no element is added twice, whatever the plan


def test_the_reference_plan_and_mains_cover_the_hidden_row_exactly():
    assert ra.coverage(Plan(224, 32, 1), 7168).exact
    assert ra.main_plan(7168) == Plan(28, 256, 1) and ra.coverage(ra.main_plan(7168), 7168).exact
    assert ra.main_plan(7169) == Plan(29, 256, 1)


@pytest.mark.parametrize("plan,n,says", [
    (Plan(224, 0, 1), 7168, "block 0"), (Plan(7, 1025, 1), 7168, "block 1025"), (Plan(0, 32, 1), 7168, "grid 0"),
    (Plan(224, 32, 0), 7168, "ept 0"), (Plan(28, 32, 9), 7168, "ept 9"),
    (Plan(223, 32, 1), 7168, "the last 32 are never added"),            # one block short
    (Plan(8, 32, 4), 1001, "writes 3 elements past the end"),           # ept does not divide n
    (Plan(2, 4, 2), 15, "writes 1 element past the end"),                # the smallest overshoot
    (Plan(1, 4, 2), 9, "the last 1 are never added"),                    # the smallest shortfall
])
def test_check_refuses_each_way_a_plan_goes_wrong_in_words(plan, n, says):
    with pytest.raises(ra.PlanError, match=says):
        ra.check(plan, n)


@pytest.mark.parametrize("plan,n", [(Plan(224, 32, 1), 7168), (Plan(1, 1024, 7), 7168), (Plan(1, 1, 1), 1),
                                    (Plan(8, 32, 1), 250), (Plan(500, 32, 1), 7168), (Plan(1, 1024, 8), 8192)])
def test_check_accepts_plans_that_cover_exactly_even_with_idle_threads(plan, n):
    assert ra.check(plan, n) == plan


@pytest.mark.parametrize("value,says", [((224, 32), "three whole numbers"), ((224, 32, 1, 1), "three whole numbers"),
                                        ((224.0, 32, 1), "grid must be a whole number"),
                                        ((224, True, 1), "block must be a whole number"), (None, "three")])
def test_a_plan_is_three_whole_numbers(value, says):
    with pytest.raises(ra.PlanError, match=says):
        ra.plan_of(value)
    assert ra.plan_of([np.int64(5), 32, 1]) == Plan(5, 32, 1)


def test_a_plan_error_is_a_launch_error_so_the_course_refuses_it_like_any_bad_geometry():
    assert issubclass(ra.PlanError, launch.LaunchError)


def test_the_gate_selects_the_registered_plan_and_defaults_to_mains_launch():
    ra.use(None)
    try:
        assert gates.GATES["LAB_ADD"].default == gates.GATES["LAB_ADD"].baseline == "0"
        assert ra.active(7168) is None                              # unset: main's add_inplace
        with gates.setting(LAB_ADD="1"):
            with pytest.raises(ra.PlanError, match="none is registered"):
                ra.active(7168)
            ra.use(lambda n: (-(-n // 64), 64, 1))
            assert ra.active(7168) == Plan(112, 64, 1)
            assert ra.active(7169) == Plan(113, 64, 1)
        assert ra.active(7168) is None
        with gates.setting(LAB_ADD="1"):
            ra.use(lambda n: (n // 64, 64, 1))                      # misses at widths 64 does not divide
            assert ra.active(7168) == Plan(112, 64, 1)
            with pytest.raises(ra.PlanError, match="never added"):
                ra.active(7169)
    finally:
        ra.use(None)


def test_use_takes_a_function():
    with pytest.raises(ra.PlanError, match="function"):
        ra.use((224, 32, 1))


def test_add_ref_rounds_once_in_float32():
    h = np.array([1.0, 2.0 ** 24], np.float32)
    a = np.array([2.0 ** -24, 1.0], np.float32)
    assert ra.add_ref(h, a).tolist() == [1.0, 2.0 ** 24]             # both round back: one fp32 add each


# ---------------------------------------------------------------- on the GPU
@pytest.mark.gpu
@pytest.mark.parametrize("plan,n", [(Plan(224, 32, 1), 7168), (Plan(28, 256, 1), 7168), (Plan(1, 1024, 7), 7168),
                                    (Plan(75, 96, 1), 7168), (Plan(4, 32, 8), 1000), (Plan(1, 1, 1), 1)])
def test_the_kernel_is_numpys_float32_add_bit_for_bit(plan, n):
    import cupy as cp
    rng = np.random.default_rng(n)
    h0, a0 = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    h, a = cp.asarray(h0), cp.asarray(a0)
    ra.launch_plan(h, a, plan)
    assert np.array_equal(cp.asnumpy(h).view(np.uint32), ra.add_ref(h0, a0).view(np.uint32))


@pytest.mark.gpu
@pytest.mark.parametrize("plan,n", [(Plan(224, 32, 1), 7168), (Plan(31, 32, 1), 1001), (Plan(8, 32, 4), 1001),
                                    (Plan(2, 4, 2), 15), (Plan(3, 128, 8), 3000), (Plan(1, 1024, 8), 100)])
def test_a_raw_launch_between_guard_words_counts_what_the_arithmetic_predicts(plan, n):
    c, want = ra.counted(plan, n), ra.coverage(plan, n)
    assert (c.missed, c.past_end, c.wrong) == (want.missed, want.past_end, 0)


@pytest.mark.gpu
def test_a_refused_plan_never_reaches_the_gpu_and_the_kernel_keeps_working():
    import cupy as cp
    h, a = cp.zeros(1001, cp.float32), cp.ones(1001, cp.float32)
    with pytest.raises(ra.PlanError):
        ra.launch_plan(h, a, Plan(8, 32, 4))
    with pytest.raises(launch.LaunchError):
        ra.launch_plan(h, a, Plan(1, 2048, 1))
    ra.launch_plan(h, a, Plan(32, 32, 1))
    assert float(h.sum()) == 1001.0


@pytest.mark.gpu
def test_the_decode_step_with_the_gate_on_is_mains_bytes_and_launches_the_plan():
    import cupy as cp

    from launchlab.kernels import decode
    m = decode.build(decode.Config(layers=3), ctx=64, extra=4)
    saved = m.save()
    ra.use(lambda n: (-(-n // 32), 32, 1))
    try:
        with gates.setting(**gates.preset("main")):
            base = cp.asnumpy(m.step(64)).copy()
            m.restore(saved)
            with gates.setting(LAB_ADD="1"):
                log = m.launches(64)
                got = cp.asnumpy(m.buf["logits"]).copy()
    finally:
        ra.use(None)
    adds = [x for x in log if x.role in ("attn_residual", "mlp_residual")]
    assert len(adds) == 6 and all(x.kernel == "residual_add:add_inplace_ept" and x.grid == (224,) and x.block == 32
                                  for x in adds)
    assert np.array_equal(base.view(np.uint32), got.view(np.uint32))
