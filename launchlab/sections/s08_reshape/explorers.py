"""§8's explorer: a split count S -> its output's bytes against S = 256's (how many differ, by how many fp32
values) and its largest error against the float64 reference over the proven bound."""
from __future__ import annotations

from launchlab.core.explorer import SLIDER, Explorer, control
from launchlab.sections.s08_reshape import figures
from launchlab.sections.s08_reshape import reassociation as ra

LIVE_S = (1, 2, 4, 8, 16, 32, 64, 128, 192, 255, 256, 257, 264, 384, 512, 1024)


class SplitExplorer(Explorer):
    """Live: decodes the recording's ctx-131,072 inputs now at the chosen S (the MLA split kernel and its
    combine) and compares the output with S = 256's; replay: the recorded split counts."""

    def __init__(self, data: "ra.ReassocData"):
        super().__init__()
        self.data = data
        self.seen = {r.splits: r for r in data.by_splits}

    def update(self, s: int) -> dict:
        row, source = ra.point(s)
        self.seen[row.splits] = row
        return {"s": s, "row": row, "source": source}

    def text(self, r: dict) -> str:
        row, n = r["row"], self.data.elements
        if row.n_differ == 0:
            moved = f"the same bytes as S = {ra.BASE_S}'s in all {n:,} outputs"
        else:
            moved = (f"{row.n_differ:,} of {n:,} outputs differ from S = {ra.BASE_S}'s (max |diff| "
                     f"{row.max_abs_diff:.1e}, {100 * row.max_bound_use:.2f} % of the bound at most); {row.sign_flips:,} "
                     f"change sign, and the median differing output is {row.own_ulps_median:,} of its own ulps away")
        return (f"S = {row.splits} splits of {row.slice_tokens:,} tokens at ctx {self.data.ctx:,} ({r['source']}): "
                f"sha256 {row.sha}\n{moved}\nmax |error| vs float64 {row.max_abs_err:.1e} = "
                f"{100 * row.err_over_bound:.2f} % of the proven bound")

    def controls(self):
        import ipywidgets as w
        options = ra.DOOR.choose(live=lambda: list(LIVE_S), replay=lambda: [r.splits for r in self.data.by_splits])
        return [control(w.SelectionSlider(options=options, value=64, description="splits S",
                                           continuous_update=False, layout=SLIDER), "s")]

    def render(self, s):
        r = self.update(s)
        shown = sorted(self.seen.values(), key=lambda x: x.splits)
        return self.text(r), figures.moves(shown, self.data.elements, chosen=r["row"].splits)
