"""§1 the arithmetic nobody does."""
from launchlab.core.section import Section
from launchlab.sections.s01_arithmetic import (achieved, bandwidth, bench, checks, driver_occupancy, exercises,
                                               explorers, figures, smaller_gpus, staircases, turn)

SECTION = Section(
    key="01", title="§1 the arithmetic nobody does", notebook="01_the_arithmetic.ipynb",
    summary="grid → share of SMs; bandwidth against grid and block; bytes in flight; wave quantization; occupancy and its limiter; achieved occupancy",
    doors=(driver_occupancy.DOOR, bandwidth.DOOR, staircases.DOOR, achieved.DOOR, smaller_gpus.DOOR, turn.DOOR),
    headlines=((bandwidth.recorded, bandwidth.headline), (staircases.recorded, staircases.headline),
               (driver_occupancy.recorded, driver_occupancy.headline), (achieved.recorded, achieved.headline),
               (smaller_gpus.recorded, smaller_gpus.headline)),
    checks=checks, exercises=exercises, figures=figures,
    explorers=(explorers.BandwidthExplorer, explorers.OccupancyExplorer, explorers.WaveExplorer,
               explorers.SliceWaveExplorer),
    benches={"stream": bench.bench_stream},
    turn=turn.TURN,
)
