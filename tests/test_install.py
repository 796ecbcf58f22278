"""tools/install.py picks the CuPy wheel from the driver's CUDA major (nvidia-smi), or none without a GPU."""
import importlib.util
import os
import stat
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("install", ROOT / "tools" / "install.py")
install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(install)

SMI = """#!/bin/sh
cat <<'OUT'
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: {v}     |
+-----------------------------------------------------------------------------------------+
OUT
"""


def _fake_smi(tmp_path, version):
    p = tmp_path / "nvidia-smi"
    p.write_text(SMI.format(v=version))
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(tmp_path)


@pytest.mark.parametrize("version,pkg", [("13.0", "cupy-cuda13x"), ("12.8", "cupy-cuda12x"), ("14.1", "cupy-cuda13x")])
def test_driver_major_picks_the_wheel(tmp_path, monkeypatch, version, pkg):
    monkeypatch.delenv("LAUNCHLAB_CUPY", raising=False)
    monkeypatch.setenv("PATH", _fake_smi(tmp_path, version) + os.pathsep + os.environ["PATH"])
    assert install.driver_cuda_major() == int(version.split(".")[0])
    assert install.cupy_package() == pkg


def test_no_gpu_installs_no_cupy(tmp_path, monkeypatch):
    monkeypatch.delenv("LAUNCHLAB_CUPY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))       # no nvidia-smi anywhere
    assert install.driver_cuda_major() is None and install.cupy_package() is None


def test_override(monkeypatch):
    monkeypatch.setenv("LAUNCHLAB_CUPY", "none")
    assert install.cupy_package() is None
    monkeypatch.setenv("LAUNCHLAB_CUPY", "cupy-cuda12x")
    assert install.cupy_package() == "cupy-cuda12x"


def test_the_presenting_shortcuts_go_into_the_environment_s_overrides_and_keep_what_is_there(tmp_path):
    """Issue 42: a remote's PageDown / PageUp step the deck; the course's settings are merged into the
    environment's JupyterLab overrides.json, whatever else that file already sets stays."""
    import json
    dst = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert install.lab_overrides(str(ROOT), str(tmp_path)) == str(dst)
    got = json.loads(dst.read_text())["@jupyterlab/shortcuts-extension:shortcuts"]["shortcuts"]
    assert {(s["command"], tuple(s["keys"])) for s in got} == {
        ("deck:forward", ("PageDown",)), ("deck:back", ("PageUp",)),
        ("notebook:enter-command-mode", ("Escape",)), ("deck:stop", ("Escape", "Escape"))}
    assert all(s["selector"].startswith("body[data-jp-deck-mode='presenting']") for s in got)   # only presenting
    # one Escape is shadowed where jupyterlab-slideshow's own Escape (deck:stop) would match, and more specifically
    slideshow = ".jp-Deck .jp-Notebook.jp-mod-commandMode:not(.jp-mod-readWrite) :focus"
    assert [s["selector"] for s in got if "Escape" in s["keys"]] == [f"body[data-jp-deck-mode='presenting'] {slideshow}"] * 2
    dst.write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}))
    install.lab_overrides(str(ROOT), str(tmp_path))
    merged = json.loads(dst.read_text())
    assert merged["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    assert "@jupyterlab/shortcuts-extension:shortcuts" in merged


def test_the_image_installs_the_presenting_settings_too():
    """The JupyterHub image builds its environment with mamba and pip, not `make lab`: its Dockerfile runs
    install.py --lab-settings, which writes only the settings."""
    docker = (ROOT / "deploy" / "image" / "Dockerfile").read_text()
    assert "python tools/install.py --lab-settings" in docker
    assert docker.index("--lab-settings") > docker.index('pip install --no-cache-dir -e "/opt/launchlab')


@pytest.mark.parametrize("text, changed, want", [
    ('{\n    // deck\n    "active": true,\n    "showCodeCellPrompt": false\n}',
     True, '{\n    // deck\n    "active": false,\n    "showCodeCellPrompt": false\n}'),
    ('{"active":true}', True, '{"active":false}'),
    ('{"active": false}', False, '{"active": false}'),
    ('{"stylePresets": {}, "trueish": true}', False, '{"stylePresets": {}, "trueish": true}'),
])
def test_make_lab_does_not_reopen_a_deck_left_shown(tmp_path, text, changed, want):
    """Issue 42: jupyterlab-slideshow saves "active": true while presenting; a tab closed mid-deck opened the next
    JupyterLab in deck mode with no menu bar. make lab sets it back before starting; nothing else in the file
    changes (JSON5 with comments), and a file without it is left alone."""
    f = tmp_path / "jupyterlab-slideshow" / "plugin.jupyterlab-settings"
    f.parent.mkdir()
    f.write_text(text)
    assert install.deck_reset(str(tmp_path)) is changed
    assert f.read_text() == want


def test_the_deck_reset_finds_the_user_s_settings_where_jupyterlab_does(tmp_path, monkeypatch):
    monkeypatch.delenv("JUPYTERLAB_SETTINGS_DIR", raising=False)
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "cfg"))
    assert install.user_settings_dir() == str(tmp_path / "cfg" / "lab" / "user-settings")
    monkeypatch.setenv("JUPYTERLAB_SETTINGS_DIR", str(tmp_path / "s"))
    assert install.user_settings_dir() == str(tmp_path / "s")
    assert install.deck_reset(str(tmp_path / "nothing-here")) is False
    assert "tools/install.py --deck-reset" in (ROOT / "Makefile").read_text().split("\nlab:", 1)[1].split("\n\n")[0]
