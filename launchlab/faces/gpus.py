"""The summary's "gpus" figures (issue 29): which machines the course's verdicts were measured on, and which it
builds for.

    green_sm_counts_measured   the green slices of the H200 (N < 132; the 132 is the whole GPU's ordinary
                               context) on which both §1's staircase and main's KDA kernel were measured -- read
                               from the sections' own figures ("01" wave_step_blocks_<N>sm, "05"
                               kda_main_ratio_<N>sm), which the slices recording holds
    green_sms_respected        every stamped launch of that recording ran on at most its slice's N SMs
                               ("01" wave_slices_respected and "05" kda_slices_respected)
    archs_compiled             the architectures every kernel builds for, with the sm_90 build's entry points
                               and non-trivial SASS (data/archs/report.json, `python -m launchlab archs --write`)
    archs_partly_built         the architectures some kernel family cannot be built for (sm_75: MLA's decode,
                               whose bf16 MMA and cp.async need sm_80; sm_70: CUDA 13's NVRTC targets sm_75 on)
    calculator_archs_checked   the architectures whose occupancy-calculator limits equal NVIDIA's table
"""
from __future__ import annotations

import re

from launchlab.core import hardware
from launchlab.faces import archs


def _counts(figs: dict, pattern: str) -> set[int]:
    return {int(m.group(1)) for k in figs if (m := re.fullmatch(pattern, k))}


def headline(sections: dict) -> dict:
    """From the sections' figures (summary.figures' {key: {figure: value}}) and the architectures' report."""
    f01, f05 = sections.get("01", {}), sections.get("05", {})
    both = _counts(f01, r"wave_step_blocks_(\d+)sm") & _counts(f05, r"kda_main_ratio_(\d+)sm")
    return {"green_sm_counts_measured": sorted(both - {hardware.H200.sm_count}),
            "green_sms_respected": bool(f01.get("wave_slices_respected")) and bool(f05.get("kda_slices_respected")),
            **archs.headline()}
