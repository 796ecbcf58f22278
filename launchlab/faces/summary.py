"""The course's headline figures, read from the recordings: `python -m launchlab summary [--json]`.

One JSON object, one key per section notebook, each figure a plain number or boolean with its unit in its
name (`_us`, `_tbs`, `_pct`, `_ns`; ratios and counts bare). Every section's manifest names its headline
figures (launchlab.sections); the summary reads the committed recordings whatever the mode, so it is the same on a laptop,
in CI and on a GPU machine. "architecture" is measured from the package's tree (launchlab.faces.architecture).
"browser" is read from the last `make test-browser` report
(data/browser/report.json, kept in the repo), and so is "presenter": the section decks given in the browser
(launchlab.faces.presenter) and the static decks opened offline. "tests" is how well the tests catch bugs, read from the mutation
and coverage reports (launchlab.faces.testsuite). "gpus" is the machines: the green slices of the H200 measured
and the architectures every kernel builds for (launchlab.faces.gpus). "hands" is what the learner launches,
fixes and answers with their own hands, counted from the notebooks, the recordings and the grading report
(launchlab.faces.hands); "grading" what the lab's step 6 gives an A/B in which nothing, or two things, changed
(issue 58: 0 of 3 each, read from the last `grade --benchmark`).
"""
from __future__ import annotations

import json
import math

from launchlab import sections
from launchlab.core import door, paths
from launchlab.faces import architecture, cuesheet, gpus, hands, page, reading, reliability, testsuite

BROWSER_REPORT = paths.ROOT / "data" / "browser" / "report.json"
HANDOUT_REPORT = paths.ROOT / "data" / "browser" / "handout.json"


def sources() -> dict[str, list]:
    """{summary key: [(read the recording(s), its headline figures)]}: every registered section's manifest,
    and the course-wide reliability figures."""
    out = {(s.summary_key or s.key): list(s.headlines) for s in sections.all() if s.headlines}
    out["reliability"] = [(lambda data_dir=None: (reliability.reports(),), reliability.headline)]
    return out


def _plain(v):
    """A figure as JSON shows it: numbers to 4 significant figures, words as they are, lists of either."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, int):
        return v
    v = float(v)
    if not math.isfinite(v):
        return None
    return float(f"{v:.4g}") if abs(v) < 1000 else round(v, 1)


def figures(data_dir=None) -> dict:
    """{section: {figure: value}}. A recording that will not load raises RecordingError (naming the fix). The
    headlines only read, so each recording is decoded once for all of them (door.reading)."""
    with door.reading():
        return _figures(data_dir)


def _figures(data_dir=None) -> dict:
    out: dict[str, dict] = {}
    for sec, pairs in sources().items():
        figs: dict = {}
        for load, headline in pairs:
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
        if "presenter" in r:                          # the section decks, live and static (issue 28)
            out["presenter"] = dict(r["presenter"])
            if HANDOUT_REPORT.exists():              # make test-browser's PDF handout (issue 42): pages per deck
                out["presenter"]["handout_pages"] = json.loads(HANDOUT_REPORT.read_text())["pages"]
            cue = cuesheet.counts()                  # the instructor's cue sheet (issue 42), from the decks
            out["presenter"]["cue_sheet_questions"] = cue["asked"]
            out["presenter"]["cue_sheet_answers"] = cue["answered"]
    out["gpus"] = gpus.headline(out)               # the slices measured, the architectures built (issue 29)
    if "audit" in out:                                # the GPUs whose traces the audit reads with checked limits
        out["audit"]["archs"] = out["gpus"]["calculator_archs_checked"]
    out["architecture"] = architecture.headline()     # measured from the package's tree, not a recording
    out["course"] = reading.headline()                # measured from the committed notebooks
    out["reading"] = page.headline()                  # what the committed outputs put on the screen (issue 41)
    out["tests"] = testsuite.headline()               # read from the tests' committed reports (issue 27)
    out["hands"] = hands.headline(data_dir)           # the learner's own launches, fix and exercises (issue 39)
    out["grading"] = hands.arms_scores()              # what an A/B of nothing scores in step 6 (issue 58)
    return out


def as_json(data_dir=None) -> str:
    return json.dumps(figures(data_dir), indent=1)


def table(data_dir=None, figs: dict | None = None) -> str:
    """The figures as text, a section at a time (`figs`: figures() already computed, else computed now)."""
    rows = []
    for sec, figs in (figures(data_dir) if figs is None else figs).items():
        rows.append(f"§{sec}" if sec != "00" else "00 start here")
        for k, v in figs.items():
            if isinstance(v, list) and v and all(isinstance(x, str) for x in v):   # one item a line
                rows += [f"  {k if i == 0 else '':<44} {x}" for i, x in enumerate(v)]
            else:
                rows.append(f"  {k:<44} {v}")
    return "\n".join(rows)

