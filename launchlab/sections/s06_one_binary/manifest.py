"""§6 one binary, two arms."""
from launchlab.core.section import Section
from launchlab.sections.s06_one_binary import bench, exercises, figures, onebinary, pdlchain, turn

SECTION = Section(
    key="06", title="§6 one binary, two arms", notebook="06_one_binary_two_arms.ipynb",
    summary="runtime gates for every variant, the restore set, ABBA per gate on the decode step, two instruments that disagree",
    doors=(onebinary.DOOR, pdlchain.DOOR, turn.DOOR),
    headlines=((onebinary.recorded, onebinary.headline), (pdlchain.recorded, pdlchain.headline_06)),
    exercises=exercises, figures=figures,
    benches={"decode": bench.bench_decode, "pdl": bench.bench_pdl, "host": bench.bench_host,
             "step-graph": bench.bench_step_graph},
    turn=turn.TURN,
)
