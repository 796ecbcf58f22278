"""A JupyterHub for `make hub-test` (and for trying the course with a few local accounts): everything on
127.0.0.1, learners' servers as local processes of this user, DummyAuthenticator.

Not for a class: DummyAuthenticator lets anyone who knows the shared password in, and a local-process spawner
gives every learner the same system account. deploy/z2jh/values.yaml is the class configuration.

Set by tests/hub/run_hub.py (or by hand):
    LAUNCHLAB_HUB_DIR       a scratch folder: database, cookie secret, the learners' home folders
    LAUNCHLAB_HUB_PORT      the public port (the hub's API and the proxy's API take the next two)
    LAUNCHLAB_HUB_PASSWORD  the shared password DummyAuthenticator accepts
    LAUNCHLAB_HUB_TOKEN     the API token of the `hub-test` service (creates the learners)
    LAUNCHLAB_HUB_PROXY     the configurable-http-proxy executable (npm's)
    LAUNCHLAB_HUB_COURSE    the course the learners' servers use, outside their homes (the class image's
                            /opt/launchlab): its notebooks are copied into each fresh home before the server
                            starts, by the image's own start hook (deploy/image/start-course.sh)
"""
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 -- provided by JupyterHub when it loads this file

here = Path(os.environ["LAUNCHLAB_HUB_DIR"])
port = int(os.environ.get("LAUNCHLAB_HUB_PORT", "18100"))

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = port + 1
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port + 2}"
c.ConfigurableHTTPProxy.command = [os.environ["LAUNCHLAB_HUB_PROXY"]]
c.ConfigurableHTTPProxy.should_start = True
c.JupyterHub.db_url = f"sqlite:///{here / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(here / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(here / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True          # stopping the hub stops every learner's server
c.JupyterHub.cleanup_proxy = True

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = os.environ["LAUNCHLAB_HUB_PASSWORD"]
c.Authenticator.allow_all = True

c.JupyterHub.spawner_class = "simple"         # jupyterhub.spawner.SimpleLocalProcessSpawner
c.SimpleLocalProcessSpawner.home_dir_template = str(here / "homes" / "{username}")
c.Spawner.cmd = [str(Path(sys.executable).with_name("jupyterhub-singleuser"))]
c.Spawner.notebook_dir = "~"


def copy_the_notebooks(spawner):
    """The class image's start hook, run the same way here: the notebooks into the learner's fresh home,
    a copy the learner already has kept."""
    import subprocess
    home = Path(spawner.home_dir_template.format(username=spawner.user.name))
    home.mkdir(parents=True, exist_ok=True)
    subprocess.run(["sh", str(Path(__file__).resolve().parents[1] / "image" / "start-course.sh")], check=True,
                   env=dict(os.environ, HOME=str(home), LAUNCHLAB_COURSE=os.environ["LAUNCHLAB_HUB_COURSE"]))


c.Spawner.pre_spawn_hook = copy_the_notebooks
c.Spawner.default_url = "/lab"
if os.geteuid() == 0:                            # CI containers run as root; a class never should
    c.Spawner.args = ["--allow-root"]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
# The course's replay mode: the same notebooks, numbers from the H200 recordings (no GPU on this machine).
c.Spawner.environment = {"LAUNCHLAB_MODE": os.environ.get("LAUNCHLAB_MODE", "replay"), "MPLBACKEND": "Agg"}

c.JupyterHub.services = [{"name": "hub-test", "api_token": os.environ["LAUNCHLAB_HUB_TOKEN"]}]
c.JupyterHub.load_roles = [{"name": "hub-test", "services": ["hub-test"],
                            "scopes": ["admin:users", "admin:servers", "list:users"]}]
