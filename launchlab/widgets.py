"""Interactive explorers for the notebooks.

Each explorer has a plain `update(...)` that computes what the widgets show (tested in tests/), and a
`widget()` that wires ipywidgets to it. Live mode relaunches the real kernel at the chosen shape and times it
now; replay mode shows the recorded H200 measurement at the same slider positions (the sliders only offer
recorded positions).
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from . import bandwidth, mode, occupancy, plots, waves


def _show(out, text: str, fig=None) -> None:
    """Replace what an explorer's output area shows: its text line, then its figure (closed after)."""
    from IPython.display import display
    with out:
        out.clear_output(wait=True)
        print(text)
        if fig is not None:
            display(fig)
    if fig is not None:
        plt.close(fig)


class BandwidthExplorer:
    def __init__(self, sweep: "bandwidth.Sweep"):
        self.sweep = sweep
        self.shown = ""      # the text the widget shows now
        self.live = mode.is_live()
        self._sr = None

    def update(self, block: int, grid: int) -> dict:
        rec = self.sweep.at(block, grid)
        row = {"block": block, "grid": grid, "in_flight_kib": self.sweep.in_flight(rec) / 1024,
               "sms_with_work": occupancy.coverage(grid).sms_with_work, "source": "recorded",
               "tbs": rec.tbs, "median_us": rec.timing.median, "stddev_us": rec.timing.stddev}
        if self.live:
            if self._sr is None:
                self._sr = bandwidth.StreamRead()
            t = self._sr.time(grid, block, reps=5)
            row.update(source="measured now", tbs=bandwidth.tb_per_s(self._sr.nbytes, t.median),
                       median_us=t.median, stddev_us=t.stddev)
        return row

    def text(self, r: dict) -> str:
        return (f"grid {r['grid']} x block {r['block']}: {r['sms_with_work']} SMs with work, "
                f"{r['in_flight_kib']:.0f} KiB in flight -> {r['tbs']:.2f} TB/s "
                f"({r['median_us']:.1f} us, stddev {r['stddev_us']:.1f} us; {r['source']})")

    def widget(self):
        import ipywidgets as w
        blocks = sorted({p.block for p in self.sweep.select()})
        grids = sorted({p.grid for p in self.sweep.select()})
        b = w.Dropdown(options=blocks, value=256, description="block")
        g = w.SelectionSlider(options=grids, value=12, description="grid", continuous_update=False,
                              layout=w.Layout(width="70%"))
        out = w.Output()

        def draw(*_):
            r = self.update(b.value, g.value)
            self.shown = self.text(r)
            fig = plots.bandwidth_vs_grid(self.sweep, mark=(b.value, g.value))
            _show(out, self.shown, fig)
        b.observe(draw, "value")
        g.observe(draw, "value")
        draw()
        return w.VBox([w.HBox([b, g]), out])


class OccupancyExplorer:
    def __init__(self, gpu="H200"):
        self.gpu = gpu
        self.shown = ""

    def update(self, block: int, regs: int, smem: int) -> occupancy.Occupancy:
        return occupancy.occupancy(block, regs, smem, self.gpu)

    def widget(self):
        import ipywidgets as w
        b = w.SelectionSlider(options=list(range(32, 1025, 32)), value=256, description="block",
                              continuous_update=False)
        r = w.IntSlider(value=32, min=16, max=255, step=1, description="regs/thread", continuous_update=False)
        s = w.IntSlider(value=0, min=0, max=227 * 1024, step=1024, description="smem B", continuous_update=False)
        out = w.Output()

        def draw(*_):
            o = self.update(b.value, r.value, s.value)
            self.shown = (o.describe() + "\nblocks/SM each resource allows: " +
                          ", ".join(f"{k} {v if v is not None else 'no limit'}" for k, v in o.limits.items()))
            fig = plots.occupancy_vs_block(r.value, s.value, self.gpu, mark_block=b.value)
            _show(out, self.shown, fig)
        for x in (b, r, s):
            x.observe(draw, "value")
        draw()
        return w.VBox([w.HBox([b, r, s]), out])


class WaveExplorer:
    def __init__(self, stairs: list):
        self.stairs = {s.residency: s for s in stairs}
        self.shown = ""
        self.live = mode.is_live()
        self._w = None

    def update(self, residency: int, grid: int) -> dict:
        st = self.stairs[residency]
        i = st.grids.index(grid)
        row = {"residency": residency, "grid": grid, "blocks_per_wave": st.blocks_per_wave,
               "waves": -(-grid // st.blocks_per_wave), "median_us": st.medians[i], "source": "recorded",
               "predicted_us": waves.predicted_us(grid, st.blocks_per_wave, st.per_wave_us())}
        if self.live:
            from . import timing
            if self._w is None:
                self._w = waves.Waves()
            t = timing.events(lambda: self._w.launch_work(grid, residency), reps=5)
            row.update(median_us=t.median, source="measured now")
        return row

    def widget(self):
        import ipywidgets as w
        r = w.Dropdown(options=sorted(self.stairs), value=2, description="blocks/SM")
        g = w.SelectionSlider(options=self.stairs[2].grids, value=self.stairs[2].grids[8], description="grid",
                              continuous_update=False, layout=w.Layout(width="70%"))
        out = w.Output()

        def on_r(*_):
            g.options = self.stairs[r.value].grids
            draw()

        def draw(*_):
            if g.value not in self.stairs[r.value].grids:
                return          # the grid options are being swapped for another residency
            row = self.update(r.value, g.value)
            self.shown = (f"grid {row['grid']} at {row['residency']} block(s)/SM = {row['waves']} wave(s) of "
                          f"{row['blocks_per_wave']}: {row['median_us']:.1f} us ({row['source']}); "
                          f"staircase model {row['predicted_us']:.1f} us")
            fig = plots.staircases([self.stairs[r.value]])
            fig.axes[0].plot([row["grid"]], [row["median_us"]], "s", ms=11, mfc="none", mec="k", mew=2)
            _show(out, self.shown, fig)
        r.observe(on_r, "value")
        g.observe(draw, "value")
        draw()
        return w.VBox([w.HBox([r, g]), out])


class RMSExplorer:
    """§2: width and block size for the widened apply, against the original at the same width."""

    def __init__(self, rec):
        self.rec = rec
        self.live = mode.is_live()
        self.shown = ""
        self._bench = {}

    def update(self, n: int, block: int) -> dict:
        import numpy as np
        from . import rmsnorm
        t = self.rec.times(n)
        orig, wide = t["original"].median, t[f"wide@{block}"].median
        source = "recorded"
        if self.live:
            b = self._bench.get(n) or self._bench.setdefault(n, rmsnorm.Bench(n))
            orig, wide = b.time("original", reps=5).median, b.time("wide", block, reps=5).median
            source = "measured now"
        x = np.zeros(n, np.float32)
        p_o = rmsnorm.plan(n, x, x, x, wide=False)
        p_w = rmsnorm.plan(n, x, x, x, block=block, wide=True, reduce="narrow")
        return {"n": n, "block": block, "original_us": orig, "wide_us": wide, "source": source,
                "original_in_flight": p_o.bytes_in_flight, "wide_in_flight": p_w.bytes_in_flight,
                "wide_expr": p_w.expr}

    def text(self, r: dict) -> str:
        return (f"width {r['n']}: original 128 threads, {r['original_in_flight']} B in flight -> "
                f"{r['original_us']:.3f} us;  {r['wide_expr']} at block {r['block']}, "
                f"{r['wide_in_flight'] // 1024} KiB in flight -> {r['wide_us']:.3f} us  "
                f"({r['original_us'] / r['wide_us']:.2f}x; {r['source']})")

    def widget(self):
        import ipywidgets as w
        widths = [row["n"] for row in self.rec.timing]
        blocks = sorted(int(b) for b in self.rec.timing[0]["wide_blocks"])
        nb = w.Dropdown(options=widths, value=7168, description="width")
        bb = w.SelectionSlider(options=blocks, value=1024, description="block", continuous_update=False)
        out = w.Output()

        def draw(*_):
            r = self.update(nb.value, bb.value)
            self.shown = self.text(r)
            fig, ax = plt.subplots(figsize=(7, 2.6))
            t = self.rec.times(nb.value)
            ax.plot(blocks, [t[f"wide@{b}"].median for b in blocks], "o-", color="#1b9e77", label="widened apply")
            ax.axhline(t["original"].median, color="#d95f02", ls="--", label="original (128 threads)")
            ax.plot([bb.value], [r["wide_us"]], "s", ms=11, mfc="none", mec="k", mew=2)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("block size of the widened apply")
            ax.set_ylabel("us per norm")
            ax.legend(fontsize=8)
            fig.tight_layout()
            _show(out, self.shown, fig)
        nb.observe(draw, "value")
        bb.observe(draw, "value")
        draw()
        return w.VBox([w.HBox([nb, bb]), out])


class KDAExplorer:
    """§3: tensor parallelism (heads per rank) and BV; grid, share of SMs with work, and the step's time."""

    def __init__(self, data: dict):
        self.data = data
        self.live = mode.is_live()
        self.shown = ""
        self._bench = {}

    def update(self, tp: int, bv: int) -> dict:
        from . import kda
        m = "store" if bv == kda.V else "rn"
        r, t = kda.sweep_point(self.data, tp, bv, m)
        p = kda.plan(kda.HEADS_TP[tp], kda.V, bv, m)
        row = {"tp": tp, "n_head": p.n_head, "bv": bv, "mode": m, "grid": p.grid, "blocks": p.blocks,
               "block": p.block, "sms": occupancy.coverage(p.blocks).sms_with_work,
               "pct": occupancy.coverage(p.blocks).percent_sms, "us": t.median, "source": "recorded"}
        if self.live:
            b = self._bench.get(p.n_head) or self._bench.setdefault(p.n_head, kda.Bench(p.n_head))
            row.update(us=b.time(bv, m, reps=5).median, source="measured now")
        return row

    def text(self, r: dict) -> str:
        return (f"tp={r['tp']}: {r['n_head']} heads, BV={r['bv']} ({r['mode']}): grid {r['grid'][0]} x {r['grid'][1]} = "
                f"{r['blocks']} blocks of {r['block']} threads, {r['sms']} SMs with work ({r['pct']:.0f}%) -> "
                f"{r['us']:.3f} us per step ({r['source']})")

    def widget(self):
        import ipywidgets as w
        tp = w.Dropdown(options=[1, 2, 4, 8], value=8, description="tp")
        bv = w.SelectionSlider(options=[16, 32, 64, 128], value=32, description="BV", continuous_update=False)
        out = w.Output()

        def draw(*_):
            self.shown = self.text(self.update(tp.value, bv.value))
            _show(out, self.shown)
        tp.observe(draw, "value")
        bv.observe(draw, "value")
        draw()
        return w.VBox([w.HBox([tp, bv]), out])
