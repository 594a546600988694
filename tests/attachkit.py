"""cireil's recording proxy in tests: a chat completions request through it, and an original's root attached to it
(the peer tests of `cireil attach`)."""

from __future__ import annotations

import http.client
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cireil.testing.scripted_llm import ScriptedLLM
from originalkit import Original, point_engine


def post_chat(port: int, data: bytes) -> int:
    """POST a chat completions body through the proxy on `port` to its provider "default"; the reply's status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/p/default/chat/completions", data, {"Content-Type": "application/json"})
        return conn.getresponse().status
    finally:
        conn.close()


def cireil_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cireil", *args], capture_output=True, text=True, timeout=60)


@contextmanager
def attached_root(original: Original, home: Path, name: str, llm: ScriptedLLM) -> Iterator[Path]:
    """The agent directory of a new root in `home` (the original's own init, its migrations marked applied, a
    workspace/notes.md), its provider `llm`, attached with `cireil attach`; on leaving, `cireil detach`, which
    must restore engine.toml byte for byte."""
    agent_dir = original.init_root(home, name, preset="standard")
    original.mark_migrations_applied(home)
    (agent_dir / "workspace" / "notes.md").write_text("one\ntwo\n")
    point_engine(agent_dir, llm.base_url)
    engine = agent_dir / "config" / "engine.toml"
    before = engine.read_bytes()
    attached = cireil_cli("attach", str(agent_dir))
    assert attached.returncode == 0, attached.stderr
    try:
        yield agent_dir
    finally:
        detached = cireil_cli("detach", str(agent_dir))
    assert detached.returncode == 0, detached.stderr
    assert engine.read_bytes() == before
