"""Interactive explorers for the notebooks.

Every explorer is built on one scaffold, `Explorer`: a row of controls that wraps on a narrow window, and one
output area that shows a text line and a figure. A subclass gives its controls and a `render(**values)` that
returns (text, figure); its plain `update(...)` computes what the widgets show and is tested in tests/
without a browser. The chosen point is marked the same way on every figure (plots.mark_chosen).

Which number a slider shows is the section's door's business (`bandwidth.point`, `waves.point`,
`rmsnorm.point`, `kda.point`): relaunched now in live mode, the recorded H200 point in replay, where the
sliders offer only recorded positions. The explorers never ask which mode they are in.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from . import bandwidth, kda, occupancy, plots, rmsnorm, waves


class Explorer:
    """The shared panel: controls in a wrapping row above one output area (text line, then figure)."""

    def __init__(self):
        self.shown = ""          # the text the explorer shows now

    def controls(self) -> list:
        raise NotImplementedError

    def render(self, **values) -> tuple[str, object]:
        raise NotImplementedError

    def _show(self, out, text: str, fig) -> None:
        from IPython.display import display
        self.shown = text
        with out:
            out.clear_output(wait=True)
            print(text)
            if fig is not None:
                display(fig)
        if fig is not None:
            plt.close(fig)

    def redraw(self) -> None:
        text, fig = self.render(**{c.description_key: c.value for c in self._controls})
        self._show(self._out, text, fig)

    def widget(self):
        import ipywidgets as w
        self._controls = self.controls()
        self._out = w.Output()
        for c in self._controls:
            c.observe(lambda *_: self.redraw(), "value")
        self.redraw()
        row = w.HBox(self._controls, layout=w.Layout(flex_flow="row wrap"))
        return w.VBox([row, self._out])


def _control(widget, key: str):
    widget.description_key = key
    return widget


class BandwidthExplorer(Explorer):
    """§1: grid and block of the streaming read -> SMs with work, bytes in flight, bandwidth."""

    def __init__(self, sweep: "bandwidth.Sweep"):
        super().__init__()
        self.sweep = sweep

    def update(self, grid: int, block: int) -> dict:
        p, source = bandwidth.point(grid, block)
        return {"grid": grid, "block": block, "in_flight_kib": self.sweep.in_flight(p) / 1024,
                "sms_with_work": occupancy.coverage(grid).sms_with_work, "source": source,
                "tbs": p.tbs, "median_us": p.timing.median, "stddev_us": p.timing.stddev}

    def text(self, r: dict) -> str:
        return (f"grid {r['grid']} x block {r['block']}: {r['sms_with_work']} SMs with work, "
                f"{r['in_flight_kib']:.0f} KiB in flight -> {r['tbs']:.2f} TB/s "
                f"({r['median_us']:.1f} us cold L2, stddev {r['stddev_us']:.1f} us; {r['source']})")

    def controls(self):
        import ipywidgets as w
        grids = sorted({p.grid for p in self.sweep.select()})
        blocks = sorted({p.block for p in self.sweep.select()})
        return [_control(w.SelectionSlider(options=grids, value=12, description="grid", continuous_update=False,
                                           layout=w.Layout(min_width="420px", flex="1 1 auto")), "grid"),
                _control(w.Dropdown(options=blocks, value=256, description="block"), "block")]

    def render(self, grid, block):
        r = self.update(grid, block)
        return self.text(r), plots.bandwidth_vs_grid(self.sweep, mark=(grid, r["tbs"]))


class OccupancyExplorer(Explorer):
    """§1: block size, registers and shared memory -> resident blocks per SM and the limiter."""

    def __init__(self, gpu="H200"):
        super().__init__()
        self.gpu = gpu

    def update(self, block: int, regs: int, smem: int) -> occupancy.Occupancy:
        return occupancy.occupancy(block, regs, smem, self.gpu)

    def controls(self):
        import ipywidgets as w
        lay = w.Layout(min_width="320px", flex="1 1 auto")
        return [_control(w.SelectionSlider(options=list(range(32, 1025, 32)), value=256, description="block",
                                           continuous_update=False, layout=lay), "block"),
                _control(w.IntSlider(value=32, min=16, max=255, step=1, description="regs/thread",
                                     continuous_update=False, layout=lay), "regs"),
                _control(w.IntSlider(value=0, min=0, max=227 * 1024, step=1024, description="smem B",
                                     continuous_update=False, layout=lay), "smem")]

    def render(self, block, regs, smem):
        o = self.update(block, regs, smem)
        text = (o.describe() + "\nblocks/SM each resource allows: " +
                ", ".join(f"{k} {v if v is not None else 'no limit'}" for k, v in o.limits.items()))
        return text, plots.occupancy_vs_block(regs, smem, self.gpu, mark_block=block)


class WaveExplorer(Explorer):
    """§1: blocks per SM and grid -> waves, and the launch's time on the staircase."""

    def __init__(self, data: "waves.WaveData"):
        super().__init__()
        self.data = data

    def update(self, residency: int, grid: int) -> dict:
        st = self.data.at(residency)
        t, source = waves.point(residency, grid)
        return {"residency": residency, "grid": grid, "blocks_per_wave": st.blocks_per_wave,
                "waves": -(-grid // st.blocks_per_wave), "median_us": t.median, "source": source,
                "predicted_us": waves.predicted_us(grid, st.blocks_per_wave, st.per_wave_us())}

    def controls(self):
        import ipywidgets as w
        st = self.data.at(2)
        res = _control(w.Dropdown(options=[s.residency for s in self.data.staircases], value=2,
                                  description="blocks/SM"), "residency")
        grid = _control(w.SelectionSlider(options=st.grids, value=st.grids[8], description="grid",
                                          continuous_update=False,
                                          layout=w.Layout(min_width="420px", flex="1 1 auto")), "grid")

        def keep_grid(change):
            # another residency has other recorded grids: keep the slider at the closest one (not at 1), and
            # draw once, after the swap (this observer runs before the panel's redraw)
            new = self.data.at(change["new"]).grids
            target = min(new, key=lambda g: abs(g - grid.value))
            self._swapping = True
            try:
                grid.options = new
                grid.value = target
            finally:
                self._swapping = False
        res.observe(keep_grid, "value")
        return [res, grid]

    def redraw(self) -> None:
        if getattr(self, "_swapping", False):
            return
        super().redraw()

    def render(self, residency, grid):
        row = self.update(residency, grid)
        text = (f"grid {row['grid']} at {row['residency']} block(s)/SM = {row['waves']} wave(s) of "
                f"{row['blocks_per_wave']}: {row['median_us']:.1f} us ({row['source']}); "
                f"staircase model {row['predicted_us']:.1f} us")
        return text, plots.staircases([self.data.at(residency)], mark=(grid, row["median_us"]))


class RMSExplorer(Explorer):
    """§2: width and block size for the widened apply, against the original at the same width."""

    def __init__(self, data: "rmsnorm.RMSData"):
        super().__init__()
        self.data = data

    def update(self, n: int, block: int) -> dict:
        orig, wide, source = rmsnorm.point(n, block)
        p_o = rmsnorm.plan(n, wide=False)
        p_w = rmsnorm.plan(n, block=block, wide=True, reduce="narrow")
        return {"n": n, "block": block, "original_us": orig, "wide_us": wide, "source": source,
                "original_in_flight": p_o.bytes_in_flight, "wide_in_flight": p_w.bytes_in_flight,
                "wide_expr": p_w.expr}

    def text(self, r: dict) -> str:
        return (f"width {r['n']}: original 128 threads, {r['original_in_flight']} B in flight -> "
                f"{r['original_us']:.3f} us;  {r['wide_expr']} at block {r['block']}, "
                f"{r['wide_in_flight'] // 1024} KiB in flight -> {r['wide_us']:.3f} us  "
                f"({r['original_us'] / r['wide_us']:.2f}x; hot L2; {r['source']})")

    def controls(self):
        import ipywidgets as w
        return [_control(w.Dropdown(options=self.data.widths, value=7168, description="width"), "n"),
                _control(w.SelectionSlider(options=self.data.blocks, value=1024, description="block",
                                           continuous_update=False), "block")]

    def render(self, n, block):
        r = self.update(n, block)
        return self.text(r), plots.rms_blocks(self.data.times(n), mark=(block, r["wide_us"]))


class KDAExplorer(Explorer):
    """§3/§5: tensor parallelism (heads per rank) and BV -> grid, share of SMs with work, the step's time."""

    def __init__(self, data: "kda.KDAData"):
        super().__init__()
        self.data = data

    def update(self, tp: int, bv: int) -> dict:
        m = "store" if bv == kda.V else "rn"
        p = kda.plan(kda.HEADS_TP[tp], kda.V, bv, m)
        us, source = kda.point(tp, bv, m)
        c = occupancy.coverage(p.blocks)
        return {"tp": tp, "n_head": p.n_head, "bv": bv, "mode": m, "grid": p.grid, "blocks": p.blocks,
                "block": p.block, "sms": c.sms_with_work, "pct": c.percent_sms, "us": us, "source": source}

    def text(self, r: dict) -> str:
        return (f"tp={r['tp']}: {r['n_head']} heads, BV={r['bv']} ({r['mode']}): grid {r['grid'][0]} x "
                f"{r['grid'][1]} = {r['blocks']} blocks of {r['block']} threads, {r['sms']} SMs with work "
                f"({r['pct']:.0f}%) -> {r['us']:.3f} us per step (graph; {r['source']})")

    def controls(self):
        import ipywidgets as w
        return [_control(w.Dropdown(options=[1, 2, 4, 8], value=8, description="tp"), "tp"),
                _control(w.SelectionSlider(options=[16, 32, 64, 128], value=32, description="BV",
                                           continuous_update=False), "bv")]

    def render(self, tp, bv):
        r = self.update(tp, bv)
        return self.text(r), plots.kda_bv(self.data, tp, mark=(bv, r["us"]))
