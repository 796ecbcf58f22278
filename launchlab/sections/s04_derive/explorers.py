"""TODO docstring"""
from __future__ import annotations

from launchlab.core import timing
from launchlab.core.explorer import SLIDER, Explorer, control
from launchlab.kernels import mla, splits
from launchlab.sections.s04_derive import derive, figures


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
            if derive.cold_caches:           # the door measured in this process: the same inputs, on the GPU
                self._live.update(derive.cold_caches)
            else:
                d = mla.inputs(1, 16, derive.CTX)
                self._live["kv"] = [cp.asarray(d["kv"]) for _ in range(2)]
                self._live["scale"] = d["scale"]
        heads = derive.HEADS_TP[tp]
        q = cp.asarray(mla.inputs(1, heads, 1, seed=7)["q"])
        p = mla.plan(1, heads, ctx, pipeline="off", slice_tokens=sp.slice_tokens)
        fns = [mla.Decoder(q, kv[:, :ctx], self._live["scale"], p) for kv in self._live["kv"]]
        return timing.graph_cold(fns, launches=4, reps=3).median

    def _recorded(self, tp: int, ctx: int, k: int) -> tuple[float | None, str]:
        if ctx == derive.CTX and k == 2:
            return self.data.tp_arm(tp, "derived").us, "recorded on the H200 (cold)"
        return None, "not recorded at this shape: the model's prediction only"

    def update(self, ctx: int, tp: int, k: int) -> dict:
        heads = derive.HEADS_TP[tp]
        sp = splits.split(ctx, heads, 1, "derived", blocks_per_sm=k)
        hard = splits.split(ctx, heads, 1, "hardcoded")
        p = mla.plan(1, heads, ctx, pipeline="off", slice_tokens=sp.slice_tokens)
        predicted = self.model.predict(sp.grid, sp.slice_tokens)
        us, source = derive.DOOR.choose(live=lambda: (self._measure(tp, ctx, sp), "measured now (graph, cold)"),
                                        replay=lambda: self._recorded(tp, ctx, k))
        return {"ctx": ctx, "tp": tp, "heads": heads, "k": k, "split": sp, "hard": hard, "plan": p,
                "predicted": predicted, "us": us, "source": source}

    def text(self, r: dict) -> str:
        sp, hard, p = r["split"], r["hard"], r["plan"]
        measured = f"{r['us']:.1f} µs ({r['source']})" if r["us"] is not None else r["source"]
        return (f"ctx {r['ctx']:,}, tp={r['tp']} ({r['heads']} heads = {sp.head_tiles} head tile(s)), "
                f"kMlaBlocksPerSm = {r['k']}: target {r['k']} x {sp.sm_count} = {sp.target_blocks} blocks\n"
                f"derived: slice {sp.slice_tokens:,} tokens -> {sp.splits} splits -> grid {sp.grid} blocks "
                f"({sp.share_of_target:.0%} of the target); main's 1,024-token floor: {hard.splits} splits, "
                f"grid {hard.grid}\n"
                f"the kernel: {p.registers} regs, {p.smem:,} B shared -> {p.blocks_per_sm} blocks/SM resident "
                f"({p.blocks_per_sm * sp.sm_count} slots)"
                + (f" -- the target asks for {r['k']} per SM, more than fit: the excess waits for a second round"
                   if r["k"] > p.blocks_per_sm else "") + "\n"
                f"slot model: {r['predicted']:.1f} µs (fitted at ctx 131,072)   measured: {measured}")

    def controls(self):
        import ipywidgets as w
        return [control(w.SelectionSlider(options=self.CTXS, value=derive.CTX, description="ctx",
                                           continuous_update=False, layout=SLIDER), "ctx"),
                control(w.Dropdown(options=[1, 2, 4, 8], value=8, description="tp"), "tp"),
                control(w.IntSlider(value=2, min=1, max=4, description="kMlaBlocksPerSm", continuous_update=False,
                                     style={"description_width": "initial"}, layout=SLIDER), "k")]

    def render(self, ctx, tp, k):
        r = self.update(ctx, tp, k)
        measured = self.data.swept("off") if (ctx == derive.CTX and tp == 8) else None
        return self.text(r), figures.mla_explore(self.model, ctx, r["heads"], r["split"], r["hard"], r["us"], measured)
