"""`python -m launchlab summary --json`: every section's headline figures, from the recordings."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab import summary

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def figs():
    p = subprocess.run([sys.executable, "-m", "launchlab", "summary", "--json"], capture_output=True, text=True,
                       cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_one_object_keyed_by_section(figs):
    assert list(figs) == ["00", "01", "02", "03", "05"]


@pytest.mark.parametrize("key", ["01.copy_ceiling_tbs", "01.peak_read_tbs", "02.rms_speedup_7168",
                                 "03.kda_tiled_speedup_12h", "03.kda_vs_fla_12h"])
def test_the_figures_the_issue_names(figs, key):
    sec, name = key.split(".")
    assert isinstance(figs[sec][name], float)


def test_every_figure_is_a_plain_number_or_boolean(figs):
    for sec, d in figs.items():
        assert d, sec
        for k, v in d.items():
            assert isinstance(v, (int, float, bool)), (sec, k, v)


def test_values_are_the_recordings(figs):
    from launchlab import bandwidth, kda
    s = bandwidth.recorded()
    assert figs["01"]["copy_ceiling_tbs"] == pytest.approx(s.copy_tbs, rel=1e-3)
    assert figs["01"]["peak_read_tbs"] == pytest.approx(s.peak().tbs, rel=1e-3)
    d = kda.recorded()
    assert figs["03"]["kda_tiled_speedup_12h"] == pytest.approx(d.diag.baseline.median / d.diag.tiled.median, rel=1e-3)


def test_the_table_prints_the_same_figures(figs):
    table = summary.table()
    for sec, d in figs.items():
        for k, v in d.items():
            assert f"{k:<44} {v}" in table


def test_a_broken_recording_fails_loudly(tmp_path):
    p = subprocess.run([sys.executable, "-m", "launchlab", "summary", "--json", "--data", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 1 and "no recording 'device'" in p.stderr and "launchlab record device" in p.stderr
