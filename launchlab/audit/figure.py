"""The audit's figure: where a step's SM-time goes idle, one bar per launch shape, the worst first.

Each bar is a shape's µs per step: its idle SM-time (µs x (1 - blocks ÷ SMs), or x (1 - wave fill)) in the
ranking's colour, the rest grey; the label names the kernel and its geometry. The title says what share of the
step's kernel time runs in launches that leave more than half the SMs without a block.
"""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt

from launchlab.audit.launches import Trace
from launchlab.audit.shapes import Shape, idle_share, ranking, short_names
from launchlab.core import figure as _style  # noqa: F401 - the course's figure style (rcParams)

IDLE, BUSY = "#d95f02", "#bdbdbd"


def idle_bars(trace: Trace | None, rows: list[Shape], top: int = 12, by: str = "sms", title: str = "",
              gpu: str = ""):
    """`trace` names the GPU (or None with `gpu`, e.g. "NVIDIA H200", for rows read back from a recording)."""
    ranked = ranking(rows, by)[:top]
    fig, ax = plt.subplots(figsize=(9.0, 0.36 * len(ranked) + 1.5))
    names = short_names([r.kernel for r in ranked], 34)
    labels = [f"{names[r.kernel]}  {'x'.join(map(str, r.grid))} x {r.threads}" for r in ranked]
    idle = [r.idle_sm_us if by == "sms" else (r.idle_wave_us or 0.0) for r in ranked]
    busy = [r.us_per_step - i for r, i in zip(ranked, idle)]
    y = list(range(len(ranked)))
    ax.barh(y, idle, color=IDLE, label="idle SM-time" + (" (blocks ÷ SMs)" if by == "sms" else " (wave fill)"))
    ax.barh(y, busy, left=idle, color=BUSY, label="SM-time with work")
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("µs per step")
    ax.legend(loc="lower right")
    name = trace.gpu.name if trace is not None else (gpu or "the GPU")
    sms = rows[0].sm_count if rows else (trace.gpu.sm_count if trace is not None else 0)
    head = (f"{name} ({sms} SMs): {idle_share(rows):.0%} of the step's kernel time in "
            f"launches that leave more than half the SMs without a block")
    fig.suptitle("\n".join(textwrap.wrap(title, 100) + textwrap.wrap(head, 100)), x=0.01, ha="left", fontsize=10)
    fig.tight_layout()
    return fig
