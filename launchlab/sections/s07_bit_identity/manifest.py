"""§7 proving bit-identity as bytes."""
from launchlab.core.section import Section
from launchlab.sections.s07_bit_identity import exercises, figures, identity, turn

SECTION = Section(
    key="07", title="§7 proving bit-identity as bytes", notebook="07_bit_identity_as_bytes.ipynb",
    summary="cmp of dumps at several depths, never a tolerance; the FMA trap in SASS and in bytes",
    doors=(identity.DOOR, turn.DOOR),
    headlines=((identity.recorded, identity.headline),),
    exercises=exercises, figures=figures,
    turn=turn.TURN,
)
