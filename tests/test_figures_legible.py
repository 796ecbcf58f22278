"""Every figure a notebook draws, readable in a laptop's notebook column (issue 26): nothing under 9 pt at the
displayed size, no text over text (launchlab.core.figure.legibility). The notebooks' code cells run in this
process in replay, each figure checked as it is drawn; every explorer's first position is checked the same
way, the figure its static preview shows."""
import contextlib
import io
import json
import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from launchlab.core import figure  # noqa: E402
from launchlab.faces import course  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _figures_of(nb_path: Path) -> list[tuple[int, list[str]]]:
    nb = json.loads(nb_path.read_text())
    ns: dict = {}
    found = []
    old = os.getcwd()
    os.chdir(nb_path.parent)
    try:
        for i, c in enumerate(nb["cells"]):
            src = "".join(c["source"])
            if c["cell_type"] != "code" or "otter" in src or "grader." in src:
                continue
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(src, f"{nb_path.name}:{i}", "exec"), ns)
            for n in plt.get_fignums():
                found.append((i, figure.legibility(plt.figure(n))))
            plt.close("all")
    finally:
        os.chdir(old)
    return found


# §1's notebook draws nine figures and its explorers' previews (~10 s on two busy CPUs): make test-slow
SLOW_NOTEBOOKS = ("01_",)


@pytest.mark.parametrize("nb", [pytest.param(p, marks=pytest.mark.slow) if p.name.startswith(SLOW_NOTEBOOKS) else p
                                for p in course.notebooks()], ids=lambda p: p.stem[:3])
def test_every_figure_of_the_notebook_is_legible(nb, monkeypatch):
    monkeypatch.setenv("LAUNCHLAB_MODE", "replay")
    problems = [f"cell {i}: {p}" for i, ps in _figures_of(nb) for p in ps]
    assert problems == [], "\n".join(problems)


def test_every_explorer_preview_figure_is_legible(monkeypatch):
    monkeypatch.setenv("LAUNCHLAB_MODE", "replay")
    from launchlab.sections.s01_arithmetic import bandwidth, explorers as e1, staircases
    from launchlab.sections.s02_width import explorers as e2, rmsnorm
    from launchlab.sections.s03_starvation import explorers as e3, kda
    from launchlab.sections.s04_derive import derive, explorers as e4
    from launchlab.sections.s08_reshape import explorers as e8, reassociation
    from launchlab.sections.s09_lab import explorers as e9, lab
    made = [e8.SplitExplorer(reassociation.recorded()), e1.BandwidthExplorer(bandwidth.recorded()), e1.WaveExplorer(staircases.recorded()), e1.OccupancyExplorer(),
            e2.RMSExplorer(rmsnorm.recorded()), e3.KDAExplorer(kda.recorded()), e4.MLAExplorer(derive.recorded()),
            e9.LabSweep(lab.recorded())]
    problems = []
    for ex in made:
        ex._controls = ex.controls()
        _, fig = ex.render(**ex.values())
        problems += [f"{type(ex).__name__}: {p}" for p in figure.legibility(fig)]
        plt.close(fig)
    assert problems == [], "\n".join(problems)


def test_the_check_finds_small_type_and_text_over_text():
    fig, ax = plt.subplots(figsize=(12, 3))          # 1,200 px shown in 900: scaled by 3/4
    ax.text(0.5, 0.5, "ten point", fontsize=10)
    ax.text(0.5, 0.5, "drawn on top", fontsize=12)
    got = figure.legibility(fig)
    plt.close(fig)
    assert any("ten point" in p and "pt" in p for p in got) and any("text over text" in p for p in got)
