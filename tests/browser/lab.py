"""A throwaway JupyterLab server on loopback for the browser tests: own root, config, settings and token."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    process: subprocess.Popen
    log: Path

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}&reset"


def start_lab(base: Path, extra_notebooks: dict[str, str]) -> Lab:
    """Start JupyterLab with the tutorials (and `extra_notebooks`, name -> JSON) copied into a fresh root."""
    root, home = base / "root", base / "home"
    for d in (root, home / "config", home / "data", home / "runtime", home / "settings", home / "workspaces"):
        d.mkdir(parents=True)
    for nb in NOTEBOOKS.glob("[0-9]*.ipynb"):
        shutil.copy(nb, root / nb.name)
    for name, text in extra_notebooks.items():
        (root / name).write_text(text)
    # The "get notified about Jupyter news?" toast would cover outputs in the screenshots.
    notification = home / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text('{"fetchNews": "false"}')
    port, token = free_port(), secrets.token_hex(16)
    # Our own config/runtime dirs keep the user's Jupyter settings (and open tabs) out of the test.
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
    }
    argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.allow_root=True",  # CI runs as root; the server only listens on loopback
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        # window.jupyterapp lets a test ask the front end for state (kernel idle, cell count) instead of guessing
        "--LabApp.expose_app_in_browser=True",
        # no network here: the update check and news fetch would only fail noisily
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.news_url=",
        "--LabApp.extension_manager=readonly",
    ]
    log = base / "jupyterlab.log"
    process = subprocess.Popen(argv, env=env, cwd=root, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"JupyterLab did not start; its log:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)
    return Lab(url=url, token=token, root=root, process=process, log=log)


def stop_lab(lab: Lab) -> None:
    lab.process.terminate()
    try:
        lab.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        lab.process.kill()
        lab.process.wait()
