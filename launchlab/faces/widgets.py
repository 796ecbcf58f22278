"""Interactive explorers for the notebooks.

Every explorer is built on one scaffold, `Explorer`: a row of controls that wraps on a narrow window, and one
output area that shows a text line and a figure. A subclass gives its controls and a `render(**values)` that
returns (text, figure); its plain `update(...)` computes what the widgets show and is tested in tests/
without a browser. The chosen point is marked the same way on every figure (plots.mark_chosen).

Before the cell runs (a notebook opened untrusted, or read on a web page) an explorer shows a static preview:
the figure of its first position with the explorer's text line and a "run the cell to explore" note, as a PNG
beside the widget in the same output (`ExplorerView`). JupyterLab renders a widget only for a trusted output of
a running kernel, and falls back to the PNG otherwise, so nothing disconnected ever looks live.

Which number a slider shows is the section's door's business (`bandwidth.point`, `staircases.point`,
`rmsnorm.point`, `kda.point`): relaunched now in live mode, the recorded H200 point in replay, where the
sliders offer only recorded positions. The explorers never ask which mode they are in.
"""
from __future__ import annotations

import base64
import html
import io
import textwrap

import ipywidgets
import matplotlib.pyplot as plt

from launchlab.core import hardware, loader, mode, occupancy, timing
from launchlab.faces import plots
from launchlab.kernels import kda_decode, mla, rms_norm, splits, stream_read
from launchlab.sections.s01_arithmetic import bandwidth, staircases
from launchlab.sections.s02_width import rmsnorm
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s04_derive import derive
from launchlab.sections.s09_lab import lab

WRAP = 110          # the preview's text lines are wrapped at word boundaries (the live text wraps by CSS)
TEXT_STYLE = ('<pre class="launchlab-explorer-text" style="white-space: pre-wrap; word-break: normal; '
              'overflow-wrap: normal; margin: 0 0 4px 0; font-size: 12px">')


def wrap(text: str, width: int = WRAP) -> str:
    return "\n".join(textwrap.fill(line, width, subsequent_indent="  ") if line else line
                     for line in text.splitlines())


def figure_png(fig, dpi: int = 80) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def preview_png(text: str, fig) -> bytes:
    """The static preview: the explorer's figure with its text line above and a note below, as a PNG."""
    top = 0.03 * (wrap(text, 100).count("\n") + 1)
    fig.text(0.01, 1.0 + top, wrap(text, 100), va="top", ha="left", fontsize=8, family="monospace",
             transform=fig.transFigure)
    fig.text(0.01, -0.02, "Static preview of the first position. Run the cell to move the sliders (live on a "
             "GPU each position relaunches the kernel; in replay it shows the H200 recording).", va="top", ha="left", fontsize=8,
             style="italic", color="#555555", transform=fig.transFigure)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72, bbox_inches="tight")
    return buf.getvalue()


class ExplorerView(ipywidgets.VBox):
    """The explorer's widget, displayed with a static PNG preview beside it in the same output: a front end
    that can render the live widget does; one that cannot (untrusted, a web page) shows the preview."""

    def __init__(self, children, preview: bytes = b"", preview_text: str = "", **kw):
        super().__init__(children, **kw)
        self._preview, self._preview_text = preview, preview_text

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        if self._preview:
            bundle["image/png"] = base64.b64encode(self._preview).decode()
            bundle["text/plain"] = ("Explorer (static preview of its first position; run the cell to explore):\n"
                                    + self._preview_text)
        return bundle


class Explorer:
    """The shared panel: controls in a wrapping row (or a column) above one output area (text, then figure)."""

    stack = False            # controls in a column, each full width (for several fine sliders)

    def __init__(self):
        self.shown = ""          # the text the explorer shows now

    def controls(self) -> list:
        raise NotImplementedError

    def render(self, **values) -> tuple[str, object]:
        raise NotImplementedError

    def _show(self, out, text: str, fig, close: bool = True) -> None:
        from IPython.display import HTML, Image, display
        self.shown = text
        # the figure is rendered here, to PNG bytes, rather than handed to the inline backend: after an HTML
        # display in the same output, the backend's rendering from a widget callback came out blank (seen in
        # JupyterLab 4.6 + ipykernel 7.4; tests/browser checks that every redraw changes the picture)
        png = figure_png(fig) if fig is not None else None
        with out:
            out.clear_output(wait=True)
            # an HTML block, not print(): the output area breaks plain text mid-word when the window is narrow
            display(HTML(TEXT_STYLE + html.escape(text) + "</pre>"))
            if png is not None:
                display(Image(data=png, format="png"))
        if fig is not None and close:
            plt.close(fig)

    def values(self) -> dict:
        return {c.description_key: c.value for c in self._controls}

    def redraw(self) -> None:
        text, fig = self.render(**self.values())
        self._show(self._out, text, fig)

    def widget(self) -> ExplorerView:
        w = ipywidgets
        self._controls = self.controls()
        self._out = w.Output()
        for c in self._controls:
            c.observe(lambda *_: self.redraw(), "value")
        text, fig = self.render(**self.values())
        self._show(self._out, text, fig, close=False)   # displayed (as a PNG) before the preview marks it up
        preview = preview_png(text, fig)
        plt.close(fig)
        rows = self.rows()
        return ExplorerView(rows + [self._out], preview=preview, preview_text=wrap(text))

    def rows(self) -> list:
        w = ipywidgets
        extras = getattr(self, "_extras", {})
        if self.stack:
            return [w.HBox([c] + ([extras[id(c)]] if id(c) in extras else [])) for c in self._controls]
        return [w.HBox(self._controls, layout=w.Layout(flex_flow="row wrap"))]


SLIDER = ipywidgets.Layout(min_width="360px", flex="1 1 auto")   # a track a learner can aim at, wrapping when narrow


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
        regs = self.sweep.regs.get(stream_read.expr(p.vec, p.unroll), 32)
        occ = occupancy.occupancy(block, regs, 0)
        in_flight = self.sweep.in_flight(p)
        latency_ns = bandwidth.latency_estimate_ns(self.sweep)
        resident = min(grid, occ.blocks_per_wave)
        return {"grid": grid, "block": block, "in_flight_kib": in_flight / 1024,
                "sms_with_work": occupancy.coverage(grid).sms_with_work, "source": source,
                "tbs": p.tbs, "median_us": p.timing.median, "stddev_us": p.timing.stddev,
                "blocks_per_sm": occ.blocks_per_sm, "blocks_per_wave": occ.blocks_per_wave,
                "slots_pct": 100 * resident * occ.warps_per_block / (occ.sm_count * occ.max_warps_per_sm),
                "little_tbs": min(in_flight / (latency_ns * 1e-9) / 1e12, self.sweep.copy_tbs * 1.06),
                "latency_ns": latency_ns, "ceiling_tbs": self.sweep.copy_tbs}

    def text(self, r: dict) -> str:
        return (f"grid {r['grid']} x block {r['block']}: {r['sms_with_work']} SMs with work, "
                f"{r['in_flight_kib']:.0f} KiB in flight -> {r['tbs']:.2f} TB/s "
                f"({r['median_us']:.1f} us cold L2, stddev {r['stddev_us']:.1f} us; {r['source']})\n"
                f"calculator: {r['blocks_per_sm']} blocks/SM, {r['blocks_per_wave']} per wave -> this grid fills "
                f"{r['slots_pct']:.1f}% of the GPU's warp slots; Little's law ({r['in_flight_kib']:.0f} KiB / "
                f"{r['latency_ns']:.0f} ns) predicts {r['little_tbs']:.2f} TB/s; the copy ceiling is "
                f"{r['ceiling_tbs']:.2f}")

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


def _exact_box(slider, step: int):
    """A number box beside a fine slider: type an exact value (the slider moves in coarser steps)."""
    box = ipywidgets.BoundedIntText(value=slider.value, min=slider.min, max=slider.max, step=step,
                                    layout=ipywidgets.Layout(width="110px"))

    def to_slider(change):
        if slider.value != change["new"]:
            slider.value = change["new"]

    def to_box(change):
        if box.value != change["new"]:
            box.value = change["new"]
    box.observe(to_slider, "value")
    slider.observe(to_box, "value")
    return box


class OccupancyExplorer(Explorer):
    """§1: block size, registers and shared memory -> resident blocks per SM and the limiter."""

    stack = True

    def __init__(self, gpu="H200"):
        super().__init__()
        self.gpu = gpu

    def update(self, block: int, regs: int, smem: int) -> occupancy.Occupancy:
        return occupancy.occupancy(block, regs, smem, self.gpu)

    def controls(self):
        w = ipywidgets
        lay = w.Layout(width="640px", max_width="95%")
        style = {"description_width": "110px"}
        block = _control(w.SelectionSlider(options=list(range(32, 1025, 32)), value=256, description="block (threads)",
                                           continuous_update=False, layout=lay, style=style), "block")
        regs = _control(w.IntSlider(value=32, min=16, max=255, step=8, description="registers/thread",
                                    continuous_update=False, readout=False, layout=lay, style=style), "regs")
        smem = _control(w.IntSlider(value=0, min=0, max=227 * 1024, step=4096, description="shared mem (B)",
                                    continuous_update=False, readout=False, layout=lay, style=style), "smem")
        self._extras = {id(regs): _exact_box(regs, 1), id(smem): _exact_box(smem, 128)}
        return [block, regs, smem]

    def render(self, block, regs, smem):
        o = self.update(block, regs, smem)
        text = (o.describe() + "\nblocks/SM each resource allows: " +
                ", ".join(f"{k} {v if v is not None else 'no limit'}" for k, v in o.limits.items()))
        return text, plots.occupancy_vs_block(regs, smem, self.gpu, mark_block=block)


class WaveExplorer(Explorer):
    """§1: blocks per SM and grid -> waves, and the launch's time on the staircase."""

    def __init__(self, data: "staircases.WaveData"):
        super().__init__()
        self.data = data

    def update(self, residency: int, grid: int) -> dict:
        st = self.data.at(residency)
        t, source = staircases.point(residency, grid)
        return {"residency": residency, "grid": grid, "blocks_per_wave": st.blocks_per_wave,
                "waves": -(-grid // st.blocks_per_wave), "median_us": t.median, "source": source,
                "predicted_us": staircases.predicted_us(grid, st.blocks_per_wave, st.per_wave_us())}

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
                f"thread) -> {r['original_us']:.3f} us;  {r['wide_expr']} at block {r['block']} "
                f"({r['wide_in_flight'] / 1024:g} KiB per load) -> {r['wide_us']:.3f} us  "
                f"({r['original_us'] / r['wide_us']:.2f}x; hot L2; {r['source']})\n"
                f"calculator: one block of {r['warps']} warps on 1 of 132 SMs ({100 * r['warps'] / (132 * 64):.2f}% "
                f"of the GPU's warp slots); floor {r['floor_us']:.3f} us (x and w read, y written, at "
                f"{self.ceiling_tbs:.2f} TB/s): one row is latency, not bandwidth")

    def controls(self):
        import ipywidgets as w
        return [_control(w.Dropdown(options=self.data.widths, value=7168, description="width"), "n"),
                _control(w.SelectionSlider(options=self.data.blocks, value=1024, description="block",
                                           continuous_update=False, layout=SLIDER), "block")]

    def render(self, n, block):
        r = self.update(n, block)
        return self.text(r), plots.rms_blocks(self.data.times(n), mark=(block, r["wide_us"]))


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
        cold = (f"; recorded cold {r['cold_us']:.2f} us = {r['cold_us'] / r['floor_us']:.1f}x the floor"
                if r["cold_us"] else "")
        return (f"tp={r['tp']}: {r['n_head']} heads, {r['body']} body, BV={r['bv']} ({r['mode']}): grid "
                f"{r['grid'][0]} x {r['grid'][1]} = {r['blocks']} blocks of {r['block']} threads, {r['cols']} "
                f"columns per warp, {r['sms']} SMs with work ({r['pct']:.0f}%) -> {r['us']:.3f} us per step "
                f"(graph, hot L2; {r['source']})\n"
                f"calculator: {r['blocks_per_sm']} blocks/SM, so the grid fills {r['wave_pct']:.1f}% of one wave; "
                f"floor {r['floor_us']:.2f} us (bytes / {self.ceiling_tbs:.2f} TB/s){cold}")

    def controls(self):
        import ipywidgets as w
        return [_control(w.Dropdown(options=[1, 2, 4, 8], value=8, description="tp"), "tp"),
                _control(w.SelectionSlider(options=[16, 32, 64, 128], value=32, description="BV",
                                           continuous_update=False, layout=SLIDER), "bv"),
                _control(w.Dropdown(options=list(kda_decode.BODIES), value="tuned", description="body"), "body")]

    def render(self, tp, bv, body="tuned"):
        r = self.update(tp, bv, body)
        return self.text(r), plots.kda_bv(self.data, tp, body, mark=(bv, r["us"]))


class MLAExplorer(Explorer):
    """§4: context, tp and the target kMlaBlocksPerSm -> the derived slice and split count, the grid, the
    kernel's residency (calculator), the slot model's predicted time and (live) the time measured now; in
    replay, the recorded time where the shape was recorded (ctx 131,072, target 2)."""

    CTXS = [4096, 8192, 16384, 32768, 65536, 131072]

    def __init__(self, data: "derive.MLAData"):
        super().__init__()
        self.data = data
        self.model = derive.fit_slots(data.swept("off"))
        self._live: dict = {}

    def _measure(self, tp: int, ctx: int, sp) -> float:
        import cupy as cp
        if "kv" not in self._live:
            d = mla.inputs(1, 16, derive.CTX)
            self._live["kv"] = [cp.asarray(d["kv"]) for _ in range(2)]
            self._live["scale"] = d["scale"]
        heads = derive.HEADS_TP[tp]
        q = cp.asarray(mla.inputs(1, heads, 1, seed=7)["q"])
        p = mla.plan(1, heads, ctx, pipeline="off", slice_tokens=sp.slice_tokens)
        fns = [mla.Decoder(q, kv[:, :ctx], self._live["scale"], p) for kv in self._live["kv"]]
        return timing.graph_cold(fns, launches=4, reps=3).median

    def update(self, ctx: int, tp: int, k: int) -> dict:
        heads = derive.HEADS_TP[tp]
        sp = splits.split(ctx, heads, 1, "derived", blocks_per_sm=k)
        hard = splits.split(ctx, heads, 1, "hardcoded")
        p = mla.plan(1, heads, ctx, pipeline="off", slice_tokens=sp.slice_tokens)
        predicted = self.model.predict(sp.grid, sp.slice_tokens)
        if mode.is_live():
            us, source = self._measure(tp, ctx, sp), "measured now (graph, cold)"
        elif ctx == derive.CTX and k == 2:
            us, source = self.data.tp_arm(tp, "derived").us, "recorded on the H200 (cold)"
        else:
            us, source = None, "not recorded at this shape: the model's prediction only"
        return {"ctx": ctx, "tp": tp, "heads": heads, "k": k, "split": sp, "hard": hard, "plan": p,
                "predicted": predicted, "us": us, "source": source}

    def text(self, r: dict) -> str:
        sp, hard, p = r["split"], r["hard"], r["plan"]
        measured = f"{r['us']:.1f} us ({r['source']})" if r["us"] is not None else r["source"]
        return (f"ctx {r['ctx']:,}, tp={r['tp']} ({r['heads']} heads = {sp.head_tiles} head tile(s)), "
                f"kMlaBlocksPerSm = {r['k']}: target {r['k']} x {sp.sm_count} = {sp.target_blocks} blocks\n"
                f"derived: slice {sp.slice_tokens:,} tokens -> {sp.splits} splits -> grid {sp.grid} blocks "
                f"({sp.share_of_target:.0%} of the target); main's 1,024-token floor: {hard.splits} splits, "
                f"grid {hard.grid}\n"
                f"the kernel: {p.registers} regs, {p.smem:,} B shared -> {p.blocks_per_sm} blocks/SM resident "
                f"({p.blocks_per_sm * sp.sm_count} slots)"
                + (f" -- the target asks for {r['k']} per SM, more than fit: the excess waits for a second round"
                   if r["k"] > p.blocks_per_sm else "") + "\n"
                f"slot model: {r['predicted']:.1f} us (fitted at ctx 131,072)   measured: {measured}")

    def controls(self):
        import ipywidgets as w
        return [_control(w.SelectionSlider(options=self.CTXS, value=derive.CTX, description="ctx",
                                           continuous_update=False, layout=SLIDER), "ctx"),
                _control(w.Dropdown(options=[1, 2, 4, 8], value=8, description="tp"), "tp"),
                _control(w.IntSlider(value=2, min=1, max=4, description="kMlaBlocksPerSm", continuous_update=False,
                                     style={"description_width": "initial"}, layout=SLIDER), "k")]

    def render(self, ctx, tp, k):
        r = self.update(ctx, tp, k)
        measured = self.data.swept("off") if (ctx == derive.CTX and tp == 8) else None
        return self.text(r), plots.mla_explore(self.model, ctx, r["heads"], r["split"], r["hard"], r["us"], measured)


class LabSweep(Explorer):
    """The lab: pick an offender's knob (the norm's block, the KDA value tile, the MLA split count) and a value;
    the whole step's ms/token and tok/s under `main` with only that launch changed, its grid, SMs with work and
    the calculator's occupancy (live: relaunched; replay: the recorded sweep)."""

    def __init__(self, data: "lab.LabData"):
        super().__init__()
        self.data = data

    def update(self, knob: str, value: int) -> dict:
        p, source = lab.point(self.data, knob, value)
        base = next(q for q in self.data.swept(knob) if q.value == lab.MAIN_SETTING[knob])
        out = {"knob": knob, "value": value, "ms": p.ms_per_token, "source": source, "grid": p.grid,
               "blocks": p.blocks if p.grid else None, "block": p.block, "kernel": p.kernel, "error": p.error,
               "base_ms": base.ms_per_token, "base_value": base.value}
        if p.grid:
            fam, expr = p.kernel.split(":", 1)
            r, _ = loader.compiled_resources(fam, expr)
            smem = r.smem_static + (self._split_smem() if fam == "mla_decode" else 0)
            o = occupancy.occupancy(p.block, r.registers, smem)
            out |= {"sms": min(p.blocks, hardware.spec("H200").sm_count), "occ_pct": 100 * o.fraction,
                    "per_sm": o.blocks_per_sm}
        return out

    @staticmethod
    def _split_smem() -> int:
        return mla.plan(1, 16, lab.CTX, "derived", "off").smem

    def text(self, r: dict) -> str:
        if r["ms"] is None:
            return f"{lab.KNOBS[r['knob']]} = {r['value']}: cannot launch ({r['error']})"
        grid = " x ".join(str(g) for g in r["grid"])
        plural = lambda n, w: f"{n} {w}{'' if n == 1 else 's'}"
        return (f"{lab.KNOBS[r['knob']]} = {r['value']}: {r['kernel'].split(':', 1)[1]} grid {grid} = "
                f"{plural(r['blocks'], 'block')} of {r['block']} threads, {plural(r['sms'], 'SM')} with work, "
                f"{r['per_sm']} resident per SM "
                f"(calculator {r['occ_pct']:.0f}% per SM)\n"
                f"the whole step: {r['ms']:.3f} ms/token = {1e3 / r['ms']:.1f} tok/s under main "
                f"({r['source']}); at main's geometry ({r['base_value']}): {r['base_ms']:.3f} ms, "
                f"{100 * (r['base_ms'] / r['ms'] - 1):+.1f}% tok/s")

    def controls(self):
        import ipywidgets as w
        knob = _control(w.Dropdown(options=[(v, k) for k, v in lab.KNOBS.items()], value="kda_bv",
                                   description="offender"), "knob")
        value = _control(w.SelectionSlider(options=list(lab.SWEEPS["kda_bv"]), value=32, description="value",
                                           continuous_update=False, layout=SLIDER), "value")

        def retarget(change):
            opts = list(lab.SWEEPS[change["new"]])
            value.options = opts
            value.value = opts[1]
        knob.observe(retarget, "value")
        return [knob, value]

    def render(self, knob, value):
        if value not in lab.SWEEPS[knob]:               # mid-switch: the slider still holds the old knob's value
            value = lab.SWEEPS[knob][1]
        r = self.update(knob, value)
        return self.text(r), plots.lab_sweep(self.data, knob, mark=(value, r["ms"]) if r["ms"] else None)
