"""TODO docstring"""
from __future__ import annotations

from launchlab.core import hardware, loader, occupancy
from launchlab.core.explorer import SLIDER, Explorer, control
from launchlab.kernels import mla
from launchlab.sections.s09_lab import figures, lab


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
                f"{100 * (r['base_ms'] / r['ms'] - 1):+.1f}% tok/s (this sweep's own runs, one launch changed "
                f"under main; not 06's gate table, which changes a gate given the other fixes)")

    def controls(self):
        import ipywidgets as w
        knob = control(w.Dropdown(options=[(v, k) for k, v in lab.KNOBS.items()], value="kda_bv",
                                   description="offender"), "knob")
        value = control(w.SelectionSlider(options=list(lab.SWEEPS["kda_bv"]), value=32, description="value",
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
        return self.text(r), figures.lab_sweep(self.data, knob, mark=(value, r["ms"]) if r["ms"] else None)
