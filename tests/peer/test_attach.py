"""The original CireilClaw itself attached to cireil's recording proxy: its cron-job turns go through the proxy to
a scripted model server, are recorded as turns of their sessions, replay offline and export as a test; detach
restores engine.toml byte for byte; a recording that fails never fails one of the original's turns."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import cireil
from attachkit import attached_root
from cireil.runtime.attach.listing import source_of
from cireil.runtime.attach.state import proxy_running
from cireil.testing.scripted_llm import ScriptedLLM, reply
from originalkit import Original

CRON = """\
[[jobs]]
id = "tidy"
prompt = "Tidy the notes."
execution = "main"
target = "internal:ops"
delivery = "none"
schedule = { every = 86400 }

[[jobs]]
id = "brief"
prompt = "Write the brief."
execution = "isolated"
delivery = "none"
schedule = { every = 86400 }
"""


def _status_reaches(port: int, key: str, least: int, timeout: float = 30) -> None:
    """Until the proxy's /cireil/status counts `least` of `key` (recorded, failures), or `timeout` passed."""
    deadline = time.monotonic() + timeout
    while json.loads(_get(port, "/cireil/status"))[key] < least and time.monotonic() < deadline:
        time.sleep(0.05)


def test_the_originals_cron_turns_are_recorded_through_the_proxy(original: Original, tmp_path: Path):
    home = tmp_path / "home"
    with ScriptedLLM(default=reply.tool_calls(("no-response", {}))) as llm:
        with attached_root(original, home, "Peer Agent", llm) as agent_dir:
            (agent_dir / "config" / "cron.toml").write_text(CRON)
            llm.script(
                reply.tool_calls(("read", {"path": "/workspace/notes.md"}, "call_notes")),
                reply.tool_calls(("no-response", {}, "call_quiet")),
                reply.tool_calls(("respond", {"content": "Brief written."}, "call_brief")),
            )
            with original.start(home) as peer:
                assert peer.cron("tidy")["ran"] is True
                assert peer.cron("brief")["ran"] is True
                peer.flush()
                # the proxy records on a thread of its own: the three exchanges so far are in its file before the
                # lock below, or on a busy machine the lock could take one of them too
                port = proxy_running(agent_dir)["port"]
                _status_reaches(port, "recorded", 3)
                # the recording fails (its file locked by another writer): the original's turn runs all the same
                llm.script(reply.tool_calls(("no-response", {}, "call_after")))
                lock = sqlite3.connect(agent_dir / "cireil-recordings.db", isolation_level=None)
                lock.execute("BEGIN EXCLUSIVE")
                try:
                    assert peer.cron("tidy")["ran"] is True
                    assert len(llm.requests) == 4
                    # held until the recorder gave up on it (SQLite's busy timeout): that exchange is lost, said
                    _status_reaches(port, "failures", 1)
                finally:
                    lock.execute("ROLLBACK")
                    lock.close()
            status = json.loads(_get(port, "/cireil/status"))
            assert status["failures"] >= 1 and status["recorded"] >= 3
        assert proxy_running(agent_dir) is None

    agent = cireil.load(agent_dir)
    try:
        production = [t for t in agent.turns("*") if source_of(t).startswith("production")]
        by_session = {t.session_id: t for t in production}
        assert set(by_session) >= {"internal:ops", "cron:peer-agent:brief"}
        tidy = next(t for t in production if t.session_id == "internal:ops")
        assert tidy.text == "Tidy the notes." and tidy.ended == "no-response"
        assert [s.tool_calls[0]["name"] for s in tidy.steps] == ["read", "no-response"]
        # the recorded bodies are what the server received, byte-equal as JSON and by their sha256
        sent = [r.body for r in llm.requests]
        assert tidy.steps[0].request == sent[0] and tidy.steps[1].request == sent[1]
        for step in tidy.steps:
            if step.reply["wire"]["exact"]:
                raw = json.dumps(step.request, ensure_ascii=False, separators=(",", ":")).encode()
                assert hashlib.sha256(raw).hexdigest() == step.reply["wire"]["sha256"]
        assert "call_notes" in json.dumps(sent[1]) and tidy.steps[0].calls[0].result.get("success") is not False
        # replayed offline with the same tool calls
        replayed = agent.replay(tidy)
        assert replayed.tool_calls == [("read", {"path": "/workspace/notes.md"}), ("no-response", {})]
        # exported as a test that passes
        exported = agent.export_test(tidy, tmp_path / "test_exported_tidy.py")
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", str(exported), "-p", "no:cacheprovider"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stdout + run.stderr
    finally:
        agent.close()
    raw = (agent_dir / "cireil-recordings.db").read_bytes()
    assert b"Bearer" not in raw


def _get(port: int, path: str) -> str:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    return conn.getresponse().read().decode()
