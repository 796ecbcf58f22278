import os
import subprocess
import sys


def _mode(env_value):
    env = dict(os.environ)
    env.pop("LAUNCHLAB_MODE", None)
    if env_value is not None:
        env["LAUNCHLAB_MODE"] = env_value
    r = subprocess.run([sys.executable, "-c", "from launchlab.core import mode; m = mode.current(); print(m.name, '|', m.reason)"],
                       capture_output=True, text=True, env=env)
    return r


def test_forced_replay():
    r = _mode("replay")
    assert r.returncode == 0 and r.stdout.startswith("replay | LAUNCHLAB_MODE=replay")


def test_bad_mode_value_is_refused():
    r = _mode("fast")
    assert r.returncode != 0 and "LAUNCHLAB_MODE='fast'" in r.stderr


def test_replay_banner_names_the_recording():
    env = dict(os.environ, LAUNCHLAB_MODE="replay")
    r = subprocess.run([sys.executable, "-c", "from launchlab.faces.banner import banner; print(banner('section01'))"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "MODE: replay" in r.stdout and "NVIDIA H200 (132 SMs)" in r.stdout and "driver" in r.stdout
