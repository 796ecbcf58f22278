"""§11's figures: where each model's step leaves SMs idle, the offenders against their floors, and the change's
ABBA reps."""
from __future__ import annotations

import statistics

import matplotlib.pyplot as plt

from launchlab.audit import figure as audit_figure
from launchlab.audit.floors import function
from launchlab.core import figure as _style  # noqa: F401 - the course's figure style
from launchlab.sections.s11_audit.realmodels import KV_CASES, AuditData

VERDICT = {"starvation": "#d95f02", "bandwidth-bound": "#1b9e77", "contention": "#7570b3", "unclear": "#999999",
           "arithmetic-bound": "#e7298a", "no floor": "#ffffff"}


def idle(d: AuditData, name: str, top: int = 10):
    """One model's launch shapes by idle SM-time (blocks ÷ SMs)."""
    m = d.model(name)
    return audit_figure.idle_bars(None, m.rows, top=top, title=f"{m.label}: batch-1 decode, {m.steps} steps",
                                  gpu=m.gpu)


def floors(d: AuditData):
    """Every offender's cold median over its floor (bytes ÷ the copy ceiling + a launch), coloured by verdict."""
    rows = [(m, f) for m in d.models for f in m.floors]
    fig, ax = plt.subplots(figsize=(9.0, 0.4 * len(rows) + 1.6))
    y = list(range(len(rows)))
    for i, (m, f) in enumerate(rows):
        if f.has_floor:
            ax.barh(i, f.ratio, color=VERDICT.get(f.verdict, "#999999"), edgecolor="#333333", linewidth=0.4)
            ax.text(f.ratio * 1.03, i, f"{f.verdict}  {f.median_us:.1f} µs cold / {f.floor_us:.1f} µs floor",
                    va="center", fontsize=9)
        else:
            ax.text(1.03, i, "no floor: " + "; ".join(f.evidence)[:70], va="center", fontsize=9, color="#555555")
    labels = [f"{m.name}: {function(f.shape.kernel)[:22]} {'x'.join(map(str, f.shape.grid))}" for m, f in rows]
    ax.set_yticks(y, labels, fontsize=9)
    ax.invert_yaxis()
    ax.axvline(1.0, color="#333333", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlim(0.8, max([f.ratio for _, f in rows if f.has_floor] + [2.0]) * 14)
    ax.set_xlabel("cold median ÷ floor (log scale; 1 = at the floor)")
    gpu = d.models[0].gpu if d.models else "the GPU"
    fig.suptitle(f"Step 4 for the top offenders: ncu's DRAM bytes and cold times on {gpu}, "
                 f"floor = bytes ÷ {d.copy_tbs:.2f} TB/s + {d.launch_us:.2f} µs", x=0.01, ha="left", fontsize=10)
    fig.tight_layout()
    return fig


def fix(d: AuditData):
    """The change's ABBA reps at each context: ms per decode step (hot), run order left to right."""
    f = d.fix
    fig, axes = plt.subplots(1, len(f.at), figsize=(4.6 * len(f.at), 3.8), squeeze=False)
    for ax, at in zip(axes[0], f.at):
        ia = ib = 0
        for k, arm in enumerate(at.order):
            if arm == "A":
                ax.plot(k, at.a_us[ia] / 1e3, "o", color="#666666", ms=4)
                ia += 1
            else:
                ax.plot(k, at.b_us[ib] / 1e3, "s", color="#d95f02", ms=4)
                ib += 1
        for us, c in ((at.a_us, "#666666"), (at.b_us, "#d95f02")):
            ax.axhline(statistics.median(us) / 1e3, color=c, linewidth=0.8, linestyle="--")
        ax.set_ylim(0, max(at.a_us + at.b_us) / 1e3 * 1.08)
        ax.set_title(f"ctx {at.ctx:,}: median step {-at.gain:+.1%}", fontsize=10)
        ax.set_xlabel("rep, in run order (ABBA)")
        ax.set_ylabel("ms per decode step (hot)")
    handles = [plt.Line2D([], [], marker="o", linestyle="", color="#666666", label="A: torch's SDPA choice"),
               plt.Line2D([], [], marker="s", linestyle="", color="#d95f02", label=f"B: SDPA limited to {f.backend}"),
               plt.Line2D([], [], linestyle="--", color="#333333", label="each arm's median")]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def host(d: AuditData):
    """Where the default backend's step time goes: wall time per step (hot) with new KV lengths, lengths seen
    before and one length, for each backend, with the SDPA op's CPU time per call written beside each bar."""
    f = d.fix
    rows = [(b, kv) for kv in KV_CASES for b in ("default", f.backend)]
    fig, ax = plt.subplots(figsize=(9.0, 3.8))
    for i, (b, kv) in enumerate(rows):
        h = f.host_check(b, kv)
        ms = h.median_us / 1e3
        ax.barh(i, ms, color="#666666" if b == "default" else "#d95f02", edgecolor="#333333", linewidth=0.4)
        cpu = f"; SDPA op {h.sdpa_cpu_us / 1e3:.2f} ms of CPU a call" if h.sdpa_cpu_us is not None else ""
        ax.text(ms * 1.08, i, f"{ms:.1f} ms a step{cpu}", va="center", fontsize=9)
    names = {"default": "torch's choice (cuDNN)", f.backend: f.backend}
    ax.set_yticks(range(len(rows)), [f"{names[b]}, KV {kv}" for b, kv in rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(1, max(h.median_us for h in f.host) / 1e3 * 40)
    ax.set_xlabel("ms per decode step (median of 12, hot; log scale)")
    ax.set_title("The default backend pays for every KV length it has not run before", fontsize=10, loc="left")
    fig.tight_layout()
    return fig
