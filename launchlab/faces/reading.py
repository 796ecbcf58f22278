"""What a learner reads, measured from the committed notebooks (their replay outputs): how long each takes to
read, which headline quantities each prints and with what value, and whether an exercise's answer is printed
above the question.

    python -m launchlab reading            # one line per notebook, then any quantity with two values and any
                                           # exercise whose answer shows above it (exit 1 if either)

Pacing, by issue 26's rule: markdown words / 150, plus one minute per code cell, plus one per figure or
explorer (a cell that shows an explorer counts once, as the explorer: one explorer per cell, as the decks of
issue 28 need, reads no slower than three in one cell). A section notebook should read in 20-40 minutes; a longer section is split into parts (02a, 02b).

Quantities: every value printed through launchlab.core.quantity.say carries its summary key in the output's
metadata; a key printed with two different texts anywhere in the course is a quantity with two values.

Answers above: an exercise (a cell tagged "exercise", checked by the next cell tagged "check") is answered above
itself when an output of an earlier code cell of the same notebook prints its expected value (or an earlier markdown cell says it, by
its `shown_by` patterns) (numbers: within
the same integer, or within 0.5 % for a fraction) or, for an exercise that names them, matches one of its `shown_by` patterns (what would state its answer
in words: a choice's verdict, or a number whose digits also name a setting in the tables above it).
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from launchlab import sections
from launchlab.core import paths, quantity
from launchlab.faces import exercises

NOTEBOOK_DIR = paths.ROOT / "notebooks"
WORDS_PER_MINUTE = 150
LIMITS_MIN = (20, 40)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SETTING = re.compile(r"(width|ctx|tp ?=|grid|block|position|positions|batch|heads?)[ =:]*$", re.I)
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", re.I)


def _load(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def _text(output: dict) -> str:
    if "text" in output:
        return "".join(output["text"])
    data = output.get("data", {})
    return "".join(data.get("text/plain", "")) + "\n" + "".join(data.get("text/markdown", ""))


@dataclass
class Pace:
    notebook: str
    words: int
    code_cells: int
    figures: int
    explorers: int

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.code_cells + self.figures + self.explorers


def pace(path: Path) -> Pace:
    nb = _load(path)
    words = sum(len(re.findall(r"\S+", "".join(c["source"]))) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    figs = expl = cells = 0
    for c in code:
        views = 0
        for o in c.get("outputs", []):
            d = o.get("data", {})
            if WIDGET_VIEW in d:
                views += 1                      # an explorer: its static preview is not counted again
            elif "image/png" in d or "image/svg+xml" in d:
                figs += 1
        expl += views
        cells += not views                      # a cell that shows an explorer counts once, as the explorer
    return Pace(Path(path).name, words, cells, figs, expl)


@dataclass
class Printed:
    notebook: str
    cell: int
    key: str
    text: str
    because: str = ""


def quantities(path: Path) -> list[Printed]:
    nb = _load(path)
    out = []
    for i, c in enumerate(nb["cells"]):
        for o in c.get("outputs", []) if c["cell_type"] == "code" else []:
            meta = o.get("metadata", {}).get(quantity.METADATA_KEY, {})
            why = meta.get("because", {})
            out += [Printed(Path(path).name, i, k, v, why.get(k, "")) for k, v in meta.get("quantities", {}).items()]
    return out


def _value(text: str) -> float | None:
    m = NUMBER.search(text)
    return float(m.group().replace(",", "")) if m else None


def drifting(printed: list[Printed], tolerance: float = 0.005) -> list[tuple[Printed, Printed]]:
    """Pairs (first, later) of one group's keys (quantity.GROUPS) printed with values more than `tolerance`
    apart with no reason beside the later one -- a number that drifts with no word why. The first print of a
    group sets the figure the others are read against; a reason (`because`) counts on the later print, or on
    the first when both are printed in the same cell (side by side, the reason said once)."""
    out = []
    for keys in quantity.GROUPS.values():
        seen = [p for p in printed if p.key in keys and _value(p.text) is not None]
        for i, later in enumerate(seen):
            first = next((p for p in seen[:i] if p.key != later.key), None)
            if first is None or later.because:
                continue
            if first.because and (first.notebook, first.cell) == (later.notebook, later.cell):
                continue
            a, b = _value(first.text), _value(later.text)
            if abs(a - b) > tolerance * max(abs(a), abs(b)):
                out.append((first, later))
    return out


def two_values(printed: list[Printed]) -> dict[str, list[Printed]]:
    """{key: where it was printed} for every key printed with more than one text."""
    by: dict[str, list[Printed]] = {}
    for p in printed:
        by.setdefault(p.key, []).append(p)
    return {k: v for k, v in by.items() if len({p.text for p in v}) > 1}


@dataclass
class Revealed:
    notebook: str
    key: str
    exercise_cell: int
    shown_in_cell: int
    evidence: str


def _check_keys(cell: dict) -> list[str]:
    try:
        tree = ast.parse("".join(cell["source"]))
    except SyntaxError:
        return []
    return [n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "attr", "") == "check" and n.args and isinstance(n.args[0], ast.Constant)]


def _numbers(text: str) -> list[float]:
    out = []
    for m in NUMBER.finditer(text):
        try:
            out.append(float(m.group().replace(",", "")))
        except ValueError:
            pass
    return out


def _reveals(e, want, text: str) -> str | None:
    for pat in e.shown_by:
        m = re.search(pat, text)
        if m:
            return f"matches {pat!r}: {m.group()[:80]!r}"
    if e.shown_by:                                # the exercise names what would state it: nothing else does
        return None
    if e.kind == "number" and isinstance(want, (int, float)) and not isinstance(want, bool) and want:
        integer = float(want).is_integer()
        for m in NUMBER.finditer(text):
            if SETTING.search(text[max(0, m.start() - 12):m.start()]):
                continue                          # a setting (width 8192, ctx 2,048), not a result
            raw = m.group().replace(",", "")
            try:
                x = float(raw)
            except ValueError:
                continue
            if len(raw.replace(".", "").replace("-", "").replace("+", "").strip("0")) < 2:
                continue                          # a single digit says nothing
            if integer:
                hit = "." not in raw and "e" not in raw.lower() and x == want
            else:
                hit = abs(x - want) <= 0.005 * abs(want)
            if hit:
                return f"prints {m.group()} (the answer is {want:.4g})"
    return None


def answers_above(path: Path, registry=None) -> list[Revealed]:
    """Exercises of this notebook whose answer an earlier code cell's output already prints."""
    if registry is None:
        registry = exercises.EXERCISES
    cells = _load(path)["cells"]
    out = []
    for i, c in enumerate(cells):
        if "exercise" not in c.get("metadata", {}).get("tags", []):
            continue
        check = next((d for d in cells[i + 1:] if "check" in d.get("metadata", {}).get("tags", [])), None)
        for key in _check_keys(check) if check else []:
            e = registry.get(key)
            if e is None or e.kind == "written":
                continue
            try:
                want = e.expected(*(e.recorded() if e.recorded else ()))
            except TypeError:                         # needs a context it does not declare: its patterns only
                want = None
            for j in range(i):
                if cells[j]["cell_type"] == "markdown":          # prose states a verdict in words only
                    text = "".join(cells[j]["source"])
                    why = next((f"says {m.group()[:80]!r}" for pat in e.shown_by
                                if (m := re.search(pat, text))), None)
                else:
                    text = "\n".join(_text(o) for o in cells[j].get("outputs", []))
                    why = _reveals(e, want, text)
                if why:
                    out.append(Revealed(Path(path).name, key, i, j, why))
                    break
    return out


@dataclass
class Reading:
    paces: list[Pace]
    printed: list[Printed]
    revealed: list[Revealed]
    conflicts: dict = field(default_factory=dict)

    @property
    def longest(self) -> Pace:
        return max(self.paces, key=lambda p: p.minutes)


def section_notebooks() -> list[Path]:
    """The section notebooks (not 00, the start page), in the registry's order."""
    return [NOTEBOOK_DIR / n for s in sections.all() if s.key != "00" for n in s.notebooks]


def read(paths_=None) -> Reading:
    nbs = list(paths_) if paths_ is not None else section_notebooks()
    printed = [p for nb in nbs for p in quantities(nb)]
    return Reading([pace(nb) for nb in nbs], printed, [r for nb in nbs for r in answers_above(nb)],
                   two_values(printed))


def headline(r: Reading | None = None) -> dict:
    r = r or read()
    mins = [p.minutes for p in r.paces]
    return {"quantities_with_two_values": len(r.conflicts), "quantities_printed": len({p.key for p in r.printed}),
            "quantities_drifting_without_why": len(drifting(r.printed)),
            "longest_notebook_minutes": round(max(mins), 1), "shortest_notebook_minutes": round(min(mins), 1),
            "exercises_answer_visible_above": len(r.revealed)}


def main(argv=None) -> int:
    r = read()
    lo, hi = LIMITS_MIN
    print(f"{'notebook':<42} {'words':>6} {'code':>5} {'figs':>5} {'expl':>5} {'minutes':>8}")
    for p in r.paces:
        flag = "" if lo <= p.minutes <= hi else ("  over 40" if p.minutes > hi else "  under 20")
        print(f"{p.notebook:<42} {p.words:>6} {p.code_cells:>5} {p.figures:>5} {p.explorers:>5} {p.minutes:>8.1f}{flag}")
    print(f"\n{len({p.key for p in r.printed})} quantities printed through launchlab.core.quantity; "
          f"{len(r.conflicts)} with two values")
    for k, ps in r.conflicts.items():
        print(f"  {k}: " + "; ".join(f"{p.text} ({p.notebook} cell {p.cell})" for p in ps))
    drift = drifting(r.printed)
    print(f"{len(drift)} figures of one thing measured twice printed with another value and no reason")
    for a, b in drift:
        print(f"  {b.key} {b.text} ({b.notebook} cell {b.cell}) against {a.key} {a.text} ({a.notebook} cell {a.cell})")
    print(f"{len(r.revealed)} exercises whose answer is printed above the question")
    for x in r.revealed:
        print(f"  {x.notebook} {x.key} (cell {x.exercise_cell}): cell {x.shown_in_cell} {x.evidence}")
    return 1 if r.conflicts or drift or r.revealed or r.longest.minutes > hi else 0
