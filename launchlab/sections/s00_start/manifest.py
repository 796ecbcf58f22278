"""00, start here: the GPU's properties and the timing instruments (the device recording)."""
from launchlab.core.section import Section
from launchlab.sections.s00_start import instruments

SECTION = Section(
    key="00", title="start here", notebook="00_start_here.ipynb",
    summary="the mode, the GPU's properties, events against CUDA graphs on a microsecond kernel, this map",
    doors=(instruments.DOOR,),
    headlines=((instruments.recorded, instruments.headline),),
)
