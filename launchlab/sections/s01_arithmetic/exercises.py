"""§1's exercises."""
from __future__ import annotations

from launchlab.core import loader, occupancy
from launchlab.core.exercise import Exercise, register
from launchlab.sections.s01_arithmetic import achieved


# ------------------------------------------------------------------ notebook 01
def _stream_occ():
    regs, smem = loader.resources("stream_read", "stream_read<4, 4>")
    return occupancy.occupancy(256, regs, smem)


register(Exercise(
    "01.blocks_per_wave", "how many blocks of 256 threads make one full wave of stream_read<4, 4> on the H200",
    lambda: _stream_occ().blocks_per_wave,
    lambda: (lambda o: f"stream_read<4, 4> uses {o.regs} registers per thread, so a block of 256 needs "
                       f"{o.regs_per_block:,} of an SM's 65,536: {o.limits['registers']} blocks by registers, "
                       f"{o.limits['warps']} by warps (64 warps / 8 per block) -> {o.blocks_per_sm} per SM, x 132 "
                       f"SMs = {o.blocks_per_wave} blocks. One more block starts a second wave.")(_stream_occ()),
    shown_by=(r"\b1,?056 blocks per wave", r"8 blocks/SM \(64/64 warps")))

register(Exercise(
    "01.achieved_grid264", "predict the achieved occupancy (percent) of the streaming read at grid 264, block 256",
    lambda d: d.case(achieved.stream_name(264)).achieved_pct,
    lambda d: (lambda c: f"264 blocks on 132 SMs is 2 per SM, 8 warps each: 2 x 8 / 64 = 25 % of the warp slots. "
                         f"The calculator allows {c.blocks_per_sm} per SM ({c.theoretical_pct:.0f} %), but the grid "
                         f"only supplies 2. The timeline measured {c.achieved_pct:.1f} %"
                         + (f", ncu {r.achieved_pct:.1f} %." if (r := d.ncu_for(c.name)) else "."))(
        d.case(achieved.stream_name(264))),
    abs_tol=5.0,
    recorded=lambda: (achieved.recorded(),)))
