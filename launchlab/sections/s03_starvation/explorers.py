"""TODO docstring"""
from __future__ import annotations

from launchlab.core import occupancy
from launchlab.core.explorer import SLIDER, Explorer, control
from launchlab.kernels import kda_decode
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s03_starvation import figures, kda


class KDAExplorer(Explorer):
    """§3/§5: tensor parallelism (heads per rank), BV and the kernel body -> grid, share of SMs with work, the
    step's time (CUDA graph, hot L2), and beside it the calculator's, the floor's and the recorded cold reading."""

    def __init__(self, data: "kda.KDAData"):
        super().__init__()
        self.data = data
        self.ceiling_tbs = bandwidth.ceiling().tbs

    def update(self, tp: int, bv: int, body: str = "tuned") -> dict:
        m = "store" if bv == kda_decode.V else "rn"
        p = kda_decode.plan(kda.HEADS_TP[tp], kda_decode.V, bv, m, body)
        us, source = kda.point(tp, bv, m, body)
        c = occupancy.coverage(p.blocks)
        g = kda_decode.geometry(p.n_head, bv, m, body)
        cold = self.data.point(tp, bv, m, body).cold
        floor = p.bytes_moved() / (self.ceiling_tbs * 1e12) * 1e6
        return {"tp": tp, "n_head": p.n_head, "bv": bv, "mode": m, "body": body, "grid": p.grid,
                "blocks": p.blocks, "block": p.block, "cols": p.columns_per_warp, "sms": c.sms_with_work,
                "pct": c.percent_sms, "us": us, "source": source, "blocks_per_sm": g.blocks_per_sm,
                "wave_pct": 100 * g.share_slots, "floor_us": floor, "cold_us": cold.median if cold else None}

    def text(self, r: dict) -> str:
        cold = (f"; recorded cold {r['cold_us']:.2f} µs = {r['cold_us'] / r['floor_us']:.1f}x the floor"
                if r["cold_us"] else "")
        return (f"tp={r['tp']}: {r['n_head']} heads, {r['body']} body, BV={r['bv']} ({r['mode']}): grid "
                f"{r['grid'][0]} x {r['grid'][1]} = {r['blocks']} blocks of {r['block']} threads, {r['cols']} "
                f"columns per warp, {r['sms']} SMs with work ({r['pct']:.0f}%) -> {r['us']:.3f} µs per step "
                f"(graph, hot L2; {r['source']})\n"
                f"calculator: {r['blocks_per_sm']} blocks/SM, so the grid fills {r['wave_pct']:.1f}% of one wave; "
                f"floor {r['floor_us']:.2f} µs (bytes / {self.ceiling_tbs:.2f} TB/s){cold}")

    def controls(self):
        import ipywidgets as w
        return [control(w.Dropdown(options=[1, 2, 4, 8], value=8, description="tp"), "tp"),
                control(w.SelectionSlider(options=[16, 32, 64, 128], value=32, description="BV",
                                           continuous_update=False, layout=SLIDER), "bv"),
                control(w.Dropdown(options=list(kda_decode.BODIES), value="tuned", description="body"), "body")]

    def render(self, tp, bv, body="tuned"):
        r = self.update(tp, bv, body)
        return self.text(r), figures.kda_bv(self.data, tp, body, mark=(bv, r["us"]))
