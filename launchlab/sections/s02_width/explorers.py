"""TODO docstring"""
from __future__ import annotations

from launchlab.core.explorer import SLIDER, Explorer, control
from launchlab.kernels import rms_norm
from launchlab.sections.s01_arithmetic import bandwidth
from launchlab.sections.s02_width import figures, rmsnorm


class RMSExplorer(Explorer):
    """§2: width and block size for the widened apply, against the original at the same width, with the
    calculator's and the floor's reading of the chosen point."""

    def __init__(self, data: "rmsnorm.RMSData"):
        super().__init__()
        self.data = data
        self.ceiling_tbs = bandwidth.ceiling().tbs

    def update(self, n: int, block: int) -> dict:
        orig, wide, source = rmsnorm.point(n, block)
        p_o = rms_norm.plan(n, wide=False, unroll="auto")
        p_w = rms_norm.plan(n, block=block, wide=True, reduce="narrow", unroll="auto")
        return {"n": n, "block": block, "original_us": orig, "wide_us": wide, "source": source,
                "original_in_flight": p_o.bytes_in_flight, "wide_in_flight": p_w.bytes_in_flight,
                "wide_expr": p_w.expr, "warps": -(-block // 32),
                "floor_us": 3 * n * 4 / (self.ceiling_tbs * 1e12) * 1e6}

    def text(self, r: dict) -> str:
        return (f"width {r['n']}: original 128 threads ({r['original_in_flight']} B per load of x, one per "
                f"thread) -> {r['original_us']:.3f} µs;  {r['wide_expr']} at block {r['block']} "
                f"({r['wide_in_flight'] / 1024:g} KiB per load) -> {r['wide_us']:.3f} µs  "
                f"({r['original_us'] / r['wide_us']:.2f}x; hot L2; {r['source']})\n"
                f"calculator: one block of {r['warps']} warps on 1 of 132 SMs ({100 * r['warps'] / (132 * 64):.2f}% "
                f"of the GPU's warp slots); floor {r['floor_us']:.3f} µs (x and w read, y written, at "
                f"{self.ceiling_tbs:.2f} TB/s): one row is latency, not bandwidth")

    def controls(self):
        import ipywidgets as w
        return [control(w.Dropdown(options=self.data.widths, value=7168, description="width"), "n"),
                control(w.SelectionSlider(options=self.data.blocks, value=1024, description="block",
                                           continuous_update=False, layout=SLIDER), "block")]

    def render(self, n, block):
        r = self.update(n, block)
        return self.text(r), figures.rms_blocks(self.data.times(n), mark=(block, r["wide_us"]))
