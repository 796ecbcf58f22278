"""The course's headline figures, read from the recordings: `python -m launchlab summary [--json]`.

One JSON object, one key per section notebook, each figure a plain number or boolean with its unit in its
name (`_us`, `_tbs`, `_pct`, `_ns`; ratios and counts bare). Every section module contributes its own
`headline()`; the summary reads the committed recordings whatever the mode, so it is the same on a laptop,
in CI and on a GPU machine. "browser" is read from the last `make test-browser` report
(data/browser/report.json, kept in the repo).
"""
from __future__ import annotations

import json
import math

from launchlab.core import paths
from launchlab.faces import grading, reliability
from launchlab.sections.s00_start import instruments
from launchlab.sections.s01_arithmetic import achieved, bandwidth, occupancy_probe, staircases
from launchlab.sections.s02_width import rmsnorm
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s04_derive import derive
from launchlab.sections.s05_sharding import audit
from launchlab.sections.s06_one_binary import accuracy, onebinary, pdlchain
from launchlab.sections.s07_bit_identity import identity
from launchlab.sections.s08_reshape import reassociation

BROWSER_REPORT = paths.ROOT / "data" / "browser" / "report.json"

def _kda_and_ceiling(data_dir=None):
    return kda.recorded(data_dir), bandwidth.CEILING.recorded(data_dir)


# section notebook -> [(read the recording(s), its headline figures)]
SOURCES = {
    "00": [(instruments.recorded, instruments.headline)],
    "01": [(bandwidth.recorded, bandwidth.headline), (staircases.recorded, staircases.headline),
           (occupancy_probe.recorded, occupancy_probe.headline), (achieved.recorded, achieved.headline)],
    "02": [(rmsnorm.recorded, rmsnorm.headline), (pdlchain.recorded, pdlchain.headline_02),
           (accuracy.recorded, accuracy.headline)],
    "03": [(kda.recorded, kda.headline), (_kda_and_ceiling, kda.starvation_headline)],
    "04": [(derive.recorded, derive.headline)],
    "05": [(kda.recorded, audit.headline)],
    "06": [(onebinary.recorded, onebinary.headline), (pdlchain.recorded, pdlchain.headline_06)],
    "07": [(identity.recorded, identity.headline)],
    "08": [(reassociation.recorded, reassociation.headline)],
    "09": [(lambda data_dir=None: grading.recorded_report(), grading.headline)],
    "reliability": [(lambda data_dir=None: (reliability.reports(),), reliability.headline)],
}


def _plain(v):
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return v
    v = float(v)
    if not math.isfinite(v):
        return None
    return float(f"{v:.4g}") if abs(v) < 1000 else round(v, 1)


def figures(data_dir=None) -> dict:
    """{section: {figure: value}}. A recording that will not load raises RecordingError (naming the fix)."""
    out: dict[str, dict] = {}
    for sec, sources in SOURCES.items():
        figs: dict = {}
        for load, headline in sources:
            loaded = load(data_dir)
            part = headline(*loaded) if isinstance(loaded, tuple) else headline(loaded)
            clash = set(part) & set(figs)
            if clash:
                raise ValueError(f"section {sec}: figures {sorted(clash)} are given twice")
            figs.update({k: _plain(v) for k, v in part.items()})
        out[sec] = figs
    if BROWSER_REPORT.exists():
        r = json.loads(BROWSER_REPORT.read_text())
        out["browser"] = {"notebooks": r["notebooks"], "widgets_moved": r["widgets_moved"],
                          "console_errors": r["console_errors"], "notebooks_failed": len(r["failed"])}
    return out


def as_json(data_dir=None) -> str:
    return json.dumps(figures(data_dir), indent=1)


def table(data_dir=None) -> str:
    rows = []
    for sec, figs in figures(data_dir).items():
        rows.append(f"§{sec}" if sec != "00" else "00 start here")
        for k, v in figs.items():
            rows.append(f"  {k:<44} {v}")
    return "\n".join(rows)

