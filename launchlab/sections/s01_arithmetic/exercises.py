"""§1's exercises."""
from __future__ import annotations

from launchlab.core import loader, occupancy
from launchlab.core.exercise import Exercise, register
from launchlab.sections.s01_arithmetic import achieved
from launchlab.sections.s01_arithmetic import turn
from launchlab.core import transfer


# ------------------------------------------------------------------ notebook 01
def _stream_occ():
    regs, smem = loader.resources("stream_read", "stream_read<4, 4>")
    return occupancy.occupancy(256, regs, smem)


def _stream_occ_on(gpu: str):
    regs, smem = loader.resources("stream_read", "stream_read<4, 4>")
    return occupancy.occupancy(256, regs, smem, gpu)


transfer.mark(register(Exercise(
    "01.blocks_per_wave", "how many blocks of 256 threads make one full wave of stream_read<4, 4> on an A100 "
                          "(108 SMs)",
    lambda: _stream_occ_on("A100").blocks_per_wave,
    lambda: (lambda o: f"stream_read<4, 4> uses {o.regs} registers per thread, so a block of 256 needs "
                       f"{o.regs_per_block:,} of an SM's 65,536: {o.limits['registers']} blocks by registers, "
                       f"{o.limits['warps']} by warps (the A100's 64 warps / 8 per block) -> {o.blocks_per_sm} per SM, "
                       f"x 108 SMs = {o.blocks_per_wave} blocks. The per-SM limits are the H200's; only the SM "
                       f"count moved the wave.")(_stream_occ_on("A100")),
    hint="a wave is blocks per SM x SMs: find which limit (registers, warps, shared memory) caps the blocks per SM "
         "for this kernel's registers per thread, then multiply by the A100's SM count, not the H200's.")),
    "an A100: 108 SMs where the notebook shows the H200's 132")

register(Exercise(
    "01.achieved_grid264", "predict the achieved occupancy (percent) of the streaming read at grid 264, block 256",
    lambda d: d.case(achieved.stream_name(264)).achieved_pct,
    lambda d: (lambda c: f"264 blocks on 132 SMs is 2 per SM, 8 warps each: 2 x 8 / 64 = 25 % of the warp slots. "
                         f"The calculator allows {c.blocks_per_sm} per SM ({c.theoretical_pct:.0f} %), but the grid "
                         f"only supplies 2. The timeline measured {c.achieved_pct:.1f} %"
                         + (f", ncu {r.achieved_pct:.1f} %." if (r := d.ncu_for(c.name)) else "."))(
        d.case(achieved.stream_name(264))),
    within_abs=5.0, unit="percentage points",
    hint="achieved occupancy is the warps resident per SM over the 64 an SM holds: how many blocks per SM does a "
         "grid of 264 supply on 132 SMs, and how many warps is a block of 256?",
    recorded=lambda: (achieved.recorded(),)))


# ------------------------------------------------------------------ the your-turn launch (turn.py)
def _work_occ(block: int, smem: int):
    regs, static = loader.resources("waves", "fixed_work")
    return occupancy.occupancy(block, regs, smem + static)


register(Exercise(
    "01.turn_second_wave", "the smallest grid of fixed_work at block 128 and 1 KiB of shared memory that takes a "
                           "second wave on the H200",
    lambda: _work_occ(128, 1024).blocks_per_wave + 1,
    lambda: (lambda o: f"At 1 KiB shared memory no longer binds ({o.limits['shared memory']} blocks would fit); "
                       f"64 warps / 4 per block allow {o.limits['warps']}, registers {o.limits['registers']}: "
                       f"{o.blocks_per_sm} blocks per SM x 132 SMs = {o.blocks_per_wave} make one wave, and block "
                       f"{o.blocks_per_wave + 1} waits for a second. With 64 warps on an SM the FMA chains compete "
                       f"for issue slots, so the time climbs before the wave ends: the step is smaller than at "
                       f"100 KiB, where each SM runs 4 warps.")(_work_occ(128, 1024)),
    hint="one wave is blocks per SM x 132; the second wave starts with the block after it. At 1 KiB shared memory "
         "no longer binds: which of warps and registers does?"))


transfer.mark(register(Exercise(
    "01.transfer_l4_second_wave", "on an L4 (58 SMs, 100 KiB of shared memory per SM), the smallest grid of "
                                  "fixed_work at block 64 and 48 KiB of shared memory that takes a second wave",
    lambda: occupancy.occupancy(64, *_fw(), "L4").blocks_per_wave + 1,
    lambda: (lambda o: f"On the L4 a block's 48 KiB + 1 KiB reserved fit {o.limits['shared memory']} times in its "
                       f"102,400 B per SM (the H200 fits 4), so {o.blocks_per_sm} blocks per SM x 58 SMs = "
                       f"{o.blocks_per_wave}: block {o.blocks_per_wave + 1} starts the second wave.")(
        occupancy.occupancy(64, *_fw(), "L4")),
    hint="count how many blocks of 48 KiB (plus the 1 KiB the driver reserves per block) fit in the L4's 100 KiB "
         "per SM, multiply by its 58 SMs, and add the block that has to wait.")), "an L4: 58 SMs and 100 KiB of shared memory per SM")


def _fw():
    regs, static = loader.resources("waves", "fixed_work")
    return regs, 48 * 1024 + static
