"""deploy/: the class configuration and the local hub (any machine). `make hub-test` runs the hub itself."""
import ast
import json
from pathlib import Path

import pytest
import yaml

from launchlab.faces import reliability

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-")


def test_every_profile_is_replay_or_asks_for_a_gpu_resource_and_goes_live():
    v = yaml.safe_load((DEPLOY / "z2jh" / "values.yaml").read_text())
    profiles = v["singleuser"]["profileList"]
    assert sum(bool(p.get("default")) for p in profiles) == 1 and "Replay" in profiles[0]["display_name"]
    assert v["singleuser"]["extraEnv"]["LAUNCHLAB_MODE"] == "replay"
    gpu = [p for p in profiles if "kubespawner_override" in p]
    kinds = set()
    for p in gpu:
        o = p["kubespawner_override"]
        (res, n), = o["extra_resource_limits"].items()
        assert res.startswith(GPU_RESOURCES) and n == "1", p["display_name"]
        assert o["environment"]["LAUNCHLAB_MODE"] == "live"
        kinds.add("mig" if "mig-" in res else "shared" if res.endswith(".shared") else "whole")
    assert kinds == {"whole", "mig", "shared"}
    assert v["hub"]["config"]["JupyterHub"]["authenticator_class"] and v["cull"]["enabled"]
    assert v["singleuser"]["cpu"]["limit"] and v["singleuser"]["memory"]["limit"]
    ts = yaml.safe_load((DEPLOY / "z2jh" / "time-slicing.yaml").read_text())
    shared = yaml.safe_load(ts["data"]["h200-shared"])["sharing"]["timeSlicing"]
    assert shared["renameByDefault"] is True and shared["resources"][0]["replicas"] >= 2


def test_the_image_is_built_from_environment_yml_and_every_profile_is_explained():
    df = (DEPLOY / "image" / "Dockerfile").read_text()
    assert "environment.yml" in df and "LAUNCHLAB_MODE=replay" in df and "[grade]" in df
    readme = (DEPLOY / "README.md").read_text()
    for words in ("a whole H200", "MIG 3g.71gb", "MIG 1g.18gb", "time-sliced share", "make hub-test"):
        assert words in readme


def test_the_local_hub_config_reads_only_what_run_hub_sets():
    src = (DEPLOY / "local" / "jupyterhub_config.py").read_text()
    ast.parse(src)
    used = {n.slice.value for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Subscript)
            and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)
            and n.slice.value.startswith("LAUNCHLAB_HUB")}
    runner = (ROOT / "tests" / "hub" / "run_hub.py").read_text()
    assert used and all(name in runner for name in used)
    assert '"dummy"' in src and '"simple"' in src and "127.0.0.1" in src


@pytest.mark.reports
def test_the_hub_report_says_every_learner_ran_and_the_hub_stopped():
    r = reliability.hub_report()
    assert r["learners"] == 3 and r["learners_ok"] == 3 and r["hub_stopped_cleanly"] and r["concurrent"]
    for row in r["rows"]:
        assert row["ok"] and row["nb01_cells"].split("/")[0] == row["nb01_cells"].split("/")[1]
        assert row["lab_cells"] == "6/6" and all("passed" in c for c in row["lab_checks"])
    # each server in a fresh home, the notebooks copied in by the image's start hook, a learner's own kept
    assert r["rows"][0]["learner"] == "learner1" and r["rows"][0]["own_copy_kept"] is True
    assert reliability.headline({"hub": r})["hub_learners_ok"] == 3


def test_the_image_is_the_learners_release_with_the_course_outside_the_home():
    df = (DEPLOY / "image" / "Dockerfile").read_text()
    assert "build/learner" in df and "COPY . /opt/launchlab" in df and "before-notebook.d" in df
    assert 'pip install --no-cache-dir -e "/opt/launchlab[grade]"' in df
    assert not any(line.startswith("COPY") and "/home" in line for line in df.splitlines())    # a mount covers it
    from launchlab.faces import release
    assert "deploy/image" in release.SHIPPED          # the build context holds the Dockerfile and its start hook


def test_the_start_hook_copies_what_is_missing_and_keeps_a_learners_copy(tmp_path):
    import subprocess
    course, home = tmp_path / "course", tmp_path / "home"
    (course / "notebooks").mkdir(parents=True)
    for name in ("01_a.ipynb", "02_b.ipynb"):
        (course / "notebooks" / name).write_text("course")
    (home / "launchlab").mkdir(parents=True)
    (home / "launchlab" / "01_a.ipynb").write_text("the learner's own")
    env = {"HOME": str(home), "LAUNCHLAB_COURSE": str(course), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["sh", str(DEPLOY / "image" / "start-course.sh")], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "1 notebook(s) copied" in out.stdout
    assert (home / "launchlab" / "01_a.ipynb").read_text() == "the learner's own"
    assert (home / "launchlab" / "02_b.ipynb").read_text() == "course"


def test_a_missing_report_names_the_command(tmp_path):
    with pytest.raises(reliability.ReliabilityError, match="make hub-test"):
        reliability.hub_report(tmp_path / "report.json")
    (tmp_path / "report.json").write_text(json.dumps({"learners": 3}))
    with pytest.raises(reliability.ReliabilityError, match="re-run"):
        reliability.hub_report(tmp_path / "report.json")


def test_the_course_ran_within_its_limit_and_every_figure_reached_the_page():
    r = reliability.course_report("replay")
    assert r["within_limit"] and r["seconds"] <= r["limit_seconds"] == 120 and r["machine"]["cpus"] >= 1
    from launchlab.faces import course
    n = len(course.notebooks())                       # 13: §2 and §3 read in two parts each (issue 26)
    assert all(n["ok"] for n in r["notebooks"]) and len(r["notebooks"]) == n
    pages = r["html_in_chromium"]
    assert len(pages) == n and all(p["ok"] and p["decoded"] == p["figures"] for p in pages)
    h = reliability.headline(reliability.reports())
    assert h["course_replay_seconds"] == r["seconds"] and h["course_replay_figures_missing"] == 0


def test_a_page_shows_an_explorers_static_preview_not_an_empty_widget_view():
    import nbformat

    from launchlab.faces import course
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"state": {}}
    cell = nbformat.v4.new_code_cell("explorer")
    cell.outputs = [nbformat.v4.new_output("execute_result", data={
        course.WIDGET_VIEW: {"model_id": "x"}, "image/png": "iVBORw0KGgo=", "text/plain": "Explorer"}),
        nbformat.v4.new_output("display_data", data={course.WIDGET_VIEW: {"model_id": "y"}})]
    nb.cells.append(cell)
    course.static_previews(nb)
    assert "widgets" not in nb.metadata
    assert list(cell.outputs[0]["data"]) == ["image/png", "text/plain"]
    assert course.WIDGET_VIEW in cell.outputs[1]["data"]          # nothing to fall back on: left as it is
