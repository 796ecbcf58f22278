"""The occupancy calculator against the driver's answers recorded on the H200, and by hand."""
import pytest

from launchlab.core import occupancy

from launchlab.sections.s01_arithmetic import driver_occupancy


def test_agrees_with_the_driver_on_every_recorded_configuration():
    check = driver_occupancy.recorded()
    rows = check.rows
    assert "NVIDIA H200" in check.source and len(rows) > 10000
    regs = {r[0] for r in rows}
    assert len(regs) >= 15 and min(regs) <= 32 and max(regs) >= 250
    assert {r[1] for r in rows} >= {0, 1024, 48000}           # static shared memory sizes
    assert max(r[2] for r in rows) >= 200 * 1024               # dynamic shared memory up to the opt-in limit
    bad = check.mismatches()
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"
    assert check.describe().endswith(": 0 disagree")


def test_every_limiter_binds_somewhere_in_the_table():
    rows = driver_occupancy.recorded().rows
    seen = set()
    for regs, st, dyn, block, _ in rows[::7]:
        seen.update(occupancy.occupancy(block, regs, st + dyn).limiter)
    assert seen == set(occupancy.LIMITERS)


def test_probe_outputs_were_byte_identical_to_numpy():
    assert all(driver_occupancy.recorded().probe_outputs_match_reference.values())


@pytest.mark.parametrize("block,regs,smem,n,limiter", [
    (1024, 32, 0, 2, ("warps", "registers")),       # 2048 threads, 64K registers: both full
    (256, 64, 0, 4, ("registers",)),                # 64 regs x 256 = 16K registers per block
    (128, 16, 0, 16, ("warps",)),
    (32, 16, 0, 32, ("block cap",)),                # 32 blocks/SM on sm_90
    (128, 32, 100 * 1024, 2, ("shared memory",)),   # (100 KiB + 1 KiB) x 2 <= 228 KiB
    (1024, 33, 0, 1, ("registers",)),               # 33 -> 40 per thread allocated (256 per warp)
    (1024, 65, 0, 0, ("registers",)),               # 65 regs x 1024 threads cannot launch
    (256, 32, 227 * 1024, 1, ("shared memory",)),
])
def test_hand_checked_cases(block, regs, smem, n, limiter):
    o = occupancy.occupancy(block, regs, smem)
    assert o.blocks_per_sm == n and o.limiter == limiter
    assert occupancy.blocks_per_sm(block, regs, smem) == n


def test_fraction_and_wave():
    o = occupancy.occupancy(256, 64, 0)
    assert o.fraction == pytest.approx(0.5) and o.blocks_per_wave == 4 * 132
    assert "limited by registers" in o.describe()


def test_over_the_limit_cannot_launch():
    assert occupancy.blocks_per_sm(256, 32, 228 * 1024) == 0
    assert not occupancy.occupancy(2048, 16, 0).can_launch
    with pytest.raises(ValueError):
        occupancy.occupancy(0, 32, 0)
    with pytest.raises(TypeError):
        occupancy.occupancy(128.5, 32, 0)


def test_the_lectures_grid_table():
    """§1: 1 -> 0.8%, 12 -> 9.1%, 48 -> 36.4%, 128 -> 97.0%, 132 one wave, 256 two waves."""
    pct = {g: round(occupancy.coverage(g).percent_sms, 1) for g in (1, 12, 48, 128)}
    assert pct == {1: 0.8, 12: 9.1, 48: 36.4, 128: 97.0}
    assert occupancy.coverage(132).verdict() == "1 full wave"
    assert occupancy.coverage(256).verdict() == "1 full wave + a tail wave 94% full"
    assert occupancy.coverage(256, blocks_per_sm=2).verdict() == "one partial wave, 97% full"
    assert occupancy.coverage(264, blocks_per_sm=2).verdict() == "1 full wave"
    with pytest.raises(ValueError):
        occupancy.coverage(0)


@pytest.mark.gpu
def test_driver_agrees_live_on_the_course_kernels():
    from launchlab.core import loader, sources
    for fam in ("stream_read", "waves"):
        for e in sources.FAMILIES[fam]:
            k = loader.kernel(fam, e)
            for block in (64, 256, 1024):
                assert occupancy.driver_blocks_per_sm(k, block, 0) == \
                    occupancy.blocks_per_sm(block, k.registers, k.smem_static)
