"""§1's explorers: the streaming read's grid and block, the occupancy calculator, the wave staircase on the
whole H200 and on slices of it."""
from __future__ import annotations

import ipywidgets

from launchlab.core import occupancy
from launchlab.core.explorer import SLIDER, Explorer, control, exact_box
from launchlab.kernels import stream_read
from launchlab.sections.s01_arithmetic import bandwidth, figures, smaller_gpus, staircases


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
                f"({r['median_us']:.1f} µs cold L2, stddev {r['stddev_us']:.1f} µs; {r['source']})\n"
                f"calculator: {r['blocks_per_sm']} blocks/SM, {r['blocks_per_wave']} per wave -> this grid fills "
                f"{r['slots_pct']:.1f}% of the GPU's warp slots; Little's law ({r['in_flight_kib']:.0f} KiB / "
                f"{r['latency_ns']:.0f} ns) predicts {r['little_tbs']:.2f} TB/s; the copy ceiling is "
                f"{r['ceiling_tbs']:.2f}")

    def controls(self):
        import ipywidgets as w
        grids = sorted({p.grid for p in self.sweep.select()})
        blocks = sorted({p.block for p in self.sweep.select()})
        return [control(w.SelectionSlider(options=grids, value=12, description="grid", continuous_update=False,
                                           layout=w.Layout(min_width="420px", flex="1 1 auto")), "grid"),
                control(w.Dropdown(options=blocks, value=256, description="block"), "block")]

    def render(self, grid, block):
        r = self.update(grid, block)
        return self.text(r), figures.bandwidth_vs_grid(self.sweep, mark=(grid, r["tbs"]))


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
        block = control(w.SelectionSlider(options=list(range(32, 1025, 32)), value=256, description="block (threads)",
                                           continuous_update=False, layout=lay, style=style), "block")
        regs = control(w.IntSlider(value=32, min=16, max=255, step=8, description="registers/thread",
                                    continuous_update=False, readout=False, layout=lay, style=style), "regs")
        smem = control(w.IntSlider(value=0, min=0, max=227 * 1024, step=4096, description="shared mem (B)",
                                    continuous_update=False, readout=False, layout=lay, style=style), "smem")
        self._extras = {id(regs): exact_box(regs, 1), id(smem): exact_box(smem, 128)}
        return [block, regs, smem]

    def render(self, block, regs, smem):
        o = self.update(block, regs, smem)
        text = (o.describe() + "\nblocks/SM each resource allows: " +
                ", ".join(f"{k} {v if v is not None else 'no limit'}" for k, v in o.limits.items()))
        return text, figures.occupancy_vs_block(regs, smem, self.gpu, mark_block=block)


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
        res = control(w.Dropdown(options=[s.residency for s in self.data.staircases], value=2,
                                  description="blocks/SM"), "residency")
        grid = control(w.SelectionSlider(options=st.grids, value=st.grids[8], description="grid",
                                          continuous_update=False,
                                          layout=w.Layout(min_width="420px", flex="1 1 auto")), "grid")

        def keep_grid(change):
            # another residency has other recorded grids: keep the slider at the closest one (not at 1)
            new = self.data.at(change["new"]).grids
            self.swap(grid, new, min(new, key=lambda g: abs(g - grid.value)))
        res.observe(keep_grid, "value")
        return [res, grid]

    def render(self, residency, grid):
        row = self.update(residency, grid)
        text = (f"grid {row['grid']} at {row['residency']} block(s)/SM = {row['waves']} wave(s) of "
                f"{row['blocks_per_wave']}: {row['median_us']:.1f} µs ({row['source']}); "
                f"staircase model {row['predicted_us']:.1f} µs")
        return text, figures.staircases([self.data.at(residency)], mark=(grid, row["median_us"]))


class SliceWaveExplorer(Explorer):
    """§1 on smaller GPUs: the SMs of the slice and the grid -> waves, and the launch's time on that slice's
    staircase (live: relaunched inside a green context of N SMs; replay: the recorded point)."""

    def __init__(self, data: "smaller_gpus.SlicedWaves"):
        super().__init__()
        self.data = data

    def update(self, sms: int, grid: int) -> dict:
        st = self.data.at(sms)
        t, source = smaller_gpus.point(sms, grid)
        return {"sms": sms, "grid": grid, "blocks_per_wave": st.blocks_per_wave, "step_blocks": st.step_blocks(),
                "waves": -(-grid // st.blocks_per_wave), "median_us": t.median, "source": source,
                "share_pct": 100 * min(grid, sms) / sms}

    def controls(self):
        import ipywidgets as w
        first = self.data.staircases[0]
        sms = control(w.SelectionSlider(options=self.data.sm_counts, value=first.sms, description="SMs",
                                         continuous_update=False, layout=SLIDER), "sms")
        grid = control(w.SelectionSlider(options=first.grids, value=first.grids[8], description="grid",
                                          continuous_update=False,
                                          layout=w.Layout(min_width="420px", flex="1 1 auto")), "grid")

        def keep_place(change):
            # every slice's staircase has as many recorded grids, at the same fractions of its wave: keep the
            # slider at the same place on the new slice's staircase
            i = list(grid.options).index(grid.value)
            new = self.data.at(change["new"]).grids
            self.swap(grid, new, new[min(i, len(new) - 1)])
        sms.observe(keep_place, "value")
        return [sms, grid]

    def render(self, sms, grid):
        r = self.update(sms, grid)
        text = (f"grid {r['grid']} on {r['sms']} SMs = {r['waves']} wave(s) of {r['blocks_per_wave']}: "
                f"{r['median_us']:.1f} µs hot ({r['source']}); its blocks can use {r['share_pct']:.0f}% of the "
                f"slice's SMs; the measured step falls after {r['step_blocks']} blocks")
        return text, figures.staircases_on_slices(self.data, sms=sms, mark=(grid, r["median_us"]))
