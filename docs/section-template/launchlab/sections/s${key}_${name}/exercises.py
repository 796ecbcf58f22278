"""${title}: the section's exercise."""
from launchlab.core import occupancy
from launchlab.core.exercise import Exercise, register
from launchlab.sections.${folder} import lesson

register(Exercise(
    key="${key}.blocks_per_sm_256", prompt="resident blocks per SM of ${family}_scale at 256 threads per block",
    expected=lambda r: r.blocks_per_sm[r.blocks.index(256)],
    why=lambda r: f"{r.registers} registers per thread, no shared memory: "
                  + occupancy.occupancy(256, r.registers, 0).describe(),
    hint="a block of 256 is 8 warps: take the fewest blocks any limit allows (the SM's 64 warps, its 65,536 "
         "registers at this kernel's registers per thread, its block slots).",
    recorded=lambda: (lesson.recorded(),)))                # the context replay passes: the section's recording
