"""`cireil attach` / `detach` / `attach --status` (runtime/attach/state.py), through the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from cireil.runtime.attach.state import PROXY_FILE, STATE_FILE, proxy_running

ENGINE = b"""# written by hand \xe2\x80\x94 kept as is
[default]
apiBase = "http://127.0.0.1:9/v1"   # the local model
apiKey = ["sk-one-0123456789", "sk-two-0123456789"]
defaultModel = "m"
isGlobalDefault = true

[default.models."a/b"]
contextWindow = 1000

[cloud]
kind = "anthropic"
apiBase = "https://api.anthropic.com/v1"
defaultModel = "c"
customHeaders = { X-Team = "garden" }
"""


def cireil(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cireil", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def agent(tmp_path: Path):
    (tmp_path / "config").mkdir()
    engine = tmp_path / "config" / "engine.toml"
    engine.write_bytes(ENGINE)
    engine.chmod(0o600)
    yield tmp_path
    info = proxy_running(tmp_path)
    if info is not None:  # a failed test must not leave its proxy behind
        os.kill(int(info["pid"]), 15)


def test_attach_then_detach_restores_the_file_byte_for_byte(agent):
    engine = agent / "config" / "engine.toml"
    done = cireil("attach", str(agent))
    assert done.returncode == 0, done.stderr
    info = proxy_running(agent)
    assert info is not None
    port = info["port"]
    assert f"[default] apiBase 'http://127.0.0.1:9/v1' -> 'http://127.0.0.1:{port}/p/default'" in done.stdout
    attached = tomllib.loads(engine.read_text())
    assert attached["default"]["apiBase"] == f"http://127.0.0.1:{port}/p/default"
    assert attached["cloud"]["apiBase"] == f"http://127.0.0.1:{port}/p/cloud"
    assert attached["default"]["apiKey"] == ["sk-one-0123456789", "sk-two-0123456789"]
    assert "# the local model" in engine.read_text()  # comments and layout stay
    assert oct(engine.stat().st_mode & 0o777) == oct(0o600)
    assert oct((agent / STATE_FILE).stat().st_mode & 0o777) == oct(0o600)

    status = cireil("attach", "--status", str(agent))
    assert status.returncode == 0 and "attached since" in status.stdout and f"port {port}" in status.stdout
    again = cireil("attach", str(agent))  # a second attach changes nothing
    assert "attached already" in again.stdout and proxy_running(agent)["pid"] == info["pid"]

    gone = cireil("detach", str(agent))
    assert gone.returncode == 0, gone.stderr
    assert engine.read_bytes() == ENGINE
    assert oct(engine.stat().st_mode & 0o777) == oct(0o600)
    assert proxy_running(agent) is None and not (agent / PROXY_FILE).exists() and not (agent / STATE_FILE).exists()
    assert "not attached" in cireil("attach", "--status", str(agent)).stdout


def test_the_files_mode_goes_back_as_it_was(agent):
    engine = agent / "config" / "engine.toml"
    engine.chmod(0o640)
    assert cireil("attach", str(agent)).returncode == 0
    assert oct(engine.stat().st_mode & 0o777) == oct(0o640)
    assert oct((agent / STATE_FILE).stat().st_mode & 0o777) == oct(0o600)  # it holds the file's bytes
    engine.chmod(0o600)  # changed while attached: the restore puts back the mode it had
    assert cireil("detach", str(agent)).returncode == 0
    assert engine.read_bytes() == ENGINE and oct(engine.stat().st_mode & 0o777) == oct(0o640)


def test_detach_refuses_to_undo_an_edit_made_while_attached(agent):
    engine = agent / "config" / "engine.toml"
    assert cireil("attach", str(agent)).returncode == 0
    edited = engine.read_bytes() + b"\n# a note added while attached\n"
    engine.write_bytes(edited)
    refused = cireil("detach", str(agent))
    assert refused.returncode == 2 and "changed since attaching" in refused.stderr and "--force" in refused.stderr
    assert engine.read_bytes() == edited and proxy_running(agent) is not None
    forced = cireil("detach", "--force", str(agent))
    assert forced.returncode == 0, forced.stderr
    assert engine.read_bytes() == ENGINE and (agent / "config" / "engine.toml.attached").read_bytes() == edited


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b'[default]\nkind = "gemini"\napiBase = "http://x/v1"\ndefaultModel = "m"\n', "cannot forward"),
        (b'[default]\napiBase = "file:///tmp"\ndefaultModel = "m"\n', "not an http(s) URL"),
        (b"[default\n", "not a TOML file"),
        (b'[default]\napiBase = "http://127.0.0.1:5/p/default"\ndefaultModel = "m"\n', "already points at a cireil"),
    ],
)
def test_attach_refuses_what_it_cannot_restore_or_forward(agent, content, said):
    engine = agent / "config" / "engine.toml"
    engine.write_bytes(content)
    refused = cireil("attach", str(agent))
    assert refused.returncode == 2 and said in refused.stderr and str(engine) in refused.stderr
    assert engine.read_bytes() == content and not (agent / STATE_FILE).exists() and proxy_running(agent) is None


def test_attach_refuses_a_symlinked_engine_toml(agent):
    engine = agent / "config" / "engine.toml"
    real = agent / "real.toml"
    real.write_bytes(ENGINE)
    engine.unlink()
    engine.symlink_to(real)
    refused = cireil("attach", str(agent))
    assert refused.returncode == 2 and "symlink" in refused.stderr
    assert engine.is_symlink() and json.dumps(str(real))
