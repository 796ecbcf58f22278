"""§5's explorer: main's KDA kernel and the fix on smaller GPUs -- the SMs of the slice and the arm -> the share
of the slice its blocks ran on (%smid stamps), its cold time against the slice's floor, and the verdict."""
from __future__ import annotations

from launchlab.core.explorer import SLIDER, Explorer, control
from launchlab.sections.s03_starvation import smaller_gpus
from launchlab.sections.s05_sharding import figures


class SliceStarvationExplorer(Explorer):
    """Live: the arm relaunched now inside a green context of N SMs (cold graph, stamped launch); replay: the
    recorded slice."""

    def __init__(self, data: "smaller_gpus.SlicedStarvation"):
        super().__init__()
        self.data = data

    def update(self, sms: int, arm: str) -> dict:
        s, source = smaller_gpus.point(sms, arm)
        d = s.diagnose(arm)
        a = s.arm(arm)
        stamped = s.stamped(arm).distinct_sms if arm in smaller_gpus.STAMPED else None
        return {"sms": sms, "arm": arm, "blocks": a.blocks, "stamped_sms": stamped,
                "share_pct": None if stamped is None else 100 * stamped / sms,
                "cold_us": a.cold.median, "floor_us": d.floor_us, "ratio": d.ratio, "verdict": d.verdict,
                "spread_pct": 100 * d.spread, "ceiling_tbs": s.ceiling.tbs, "source": source}

    def controls(self):
        import ipywidgets as w
        return [control(w.SelectionSlider(options=self.data.sm_counts, value=self.data.sm_counts[0],
                                           description="SMs", continuous_update=False, layout=SLIDER), "sms"),
                control(w.Dropdown(options=list(smaller_gpus.ARMS), value="main", description="kernel"), "arm")]

    def render(self, sms, arm):
        r = self.update(sms, arm)
        where = (f"its {r['blocks']} blocks ran on {r['stamped_sms']} of the slice's {sms} SMs "
                 f"({r['share_pct']:.0f}%, %smid)" if r["stamped_sms"] is not None
                 else f"{r['blocks']} blocks")
        text = (f"{arm} on {sms} SMs: {where}; {r['cold_us']:.1f} µs cold against a floor of {r['floor_us']:.2f} µs "
                f"(bytes / this slice's copy ceiling, {r['ceiling_tbs']:.2f} TB/s) = {r['ratio']:.1f}x, robust "
                f"spread {r['spread_pct']:.1f}% -> {r['verdict']} ({r['source']})")
        return text, figures.kda_on_slices(self.data, sms=sms, arm=arm)
