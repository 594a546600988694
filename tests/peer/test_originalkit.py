"""The harness that runs the original CireilClaw (tests/originalkit.py and its driver) does what it says:
the original's own init output, its startup refusing to guess at a prompt, each op through the original's
code, its shutdown flushing, failures and hangs reported with its stderr instead of hanging pytest, and a
machine without npm skipping with one line."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import tomllib
from pathlib import Path

import pytest

import originalkit
from cireil.testing.scripted_llm import ScriptedLLM, reply
from originalkit import Original, OriginalError, point_engine

HEARTBEAT = 'target = "internal:beat"\n'


def row(agent_dir: Path, session: str) -> dict | None:
    db = sqlite3.connect(agent_dir / "sessions.db")
    try:
        db.row_factory = sqlite3.Row
        found = db.execute("SELECT * FROM sessions WHERE id = ?", (session,)).fetchone()
        return dict(found) if found else None
    finally:
        db.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_init_writes_what_the_originals_init_writes(original: Original, home: Path) -> None:
    agent_dir = original.init_root(home, "Full Fern", preset="full", binaries=["ls", "cat"], model="m-1")
    assert agent_dir.name == "full-fern"
    root = home / ".cireilclaw"
    assert sorted(p.name for p in (root / "config").iterdir()) == []  # no migrations.json, no engine.toml
    names = sorted(str(p.relative_to(agent_dir)) for p in agent_dir.rglob("*") if p.is_file())
    assert names == [
        "blocks/identity.md",
        "blocks/long-term.md",
        "blocks/person.md",
        "blocks/soul.md",
        "blocks/style-notes.md",
        "config/engine.toml",
        "config/sandbox.toml",
        "config/tools.toml",
        "core.md",
        "skills/create-skill/SKILL.md",
    ]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in agent_dir.rglob("*") if p.is_file())
    tools = tomllib.loads((agent_dir / "config" / "tools.toml").read_text())
    assert tools["exec"] == {"enabled": True, "timeout": 60000} and tools["str-replace"] is True
    assert tomllib.loads((agent_dir / "config" / "sandbox.toml").read_text())["bwrap"] == {"binaries": ["ls", "cat"]}
    engine = tomllib.loads((agent_dir / "config" / "engine.toml").read_text())["default"]
    assert engine["defaultModel"] == "m-1" and engine["kind"] == "openai" and engine["apiKey"] == "not-needed"

    point_engine(agent_dir, "http://127.0.0.1:1/v1", "anthropic", context_window=32000)
    engine = tomllib.loads((agent_dir / "config" / "engine.toml").read_text())
    assert engine == {
        "default": {
            "apiBase": "http://127.0.0.1:1/v1",
            "apiKey": "not-needed",
            "defaultModel": "m-1",
            "isGlobalDefault": True,
            "kind": "anthropic",
            "models": {"m-1": {"contextWindow": 32000}},
        }
    }


def test_an_unanswered_prompt_fails_the_start_naming_it(original: Original, home: Path) -> None:
    original.init_root(home)
    with pytest.raises(OriginalError, match=r'asked \(select\) "How would you like to proceed\?"'):
        original.start(home, timeout=60)


def test_ops_run_through_the_originals_code_and_sigint_flushes(original: Original, home: Path) -> None:
    agent_dir = original.init_root(home, "Ops")
    original.mark_migrations_applied(home)
    (agent_dir / "tasks" / "HEARTBEAT.md").write_text("- check the plants\n")
    (agent_dir / "config" / "heartbeat.toml").write_text(HEARTBEAT)
    with ScriptedLLM(default=reply.tool_calls(("no-response", {}))) as llm:
        point_engine(agent_dir, llm.base_url)
        with original.start(home, "ops") as peer:
            assert peer.ready["agents"] == ["ops"] and peer.startup_seconds is not None

            llm.script(reply.tool_calls(("respond", {"content": "Hi!"})))
            answer = peer.turn("discord:555|777", "hello", author={"id": "42", "username": "ann", "displayName": "Ann"})
            assert answer["history"] == 3
            assert [(s["session"], s["content"]) for s in answer["sent"]] == [("discord:555|777", "Hi!")]
            user = llm.requests[-1].body["messages"][1]["content"][0]["text"]
            assert user.startswith('<msg from="ann <42>" displayName="Ann" timestamp="')
            assert user.endswith(f' id="{answer["messageId"]}">hello</msg>')
            (listed,) = peer.sessions()
            assert listed["id"] == "discord:555|777" and listed["lastActivity"] > 0
            stored = peer.history("discord:555|777")
            assert stored[0]["id"] == answer["messageId"] and stored[1]["id"] == answer["sent"][0]["messageId"]

            peer.heartbeat()
            assert llm.requests[-1].body["messages"][-2]["content"][0]["text"].startswith("[HEARTBEAT]")

            bad = peer.request({"op": "nonsense"}, check=False)
            assert bad["ok"] is False and "unknown op" in bad["error"]
            with pytest.raises(OriginalError, match=r"no job 'missing' in config/cron\.toml"):
                peer.cron("missing")

            # the internal channel has no handler in the original: respond fails there, the turn goes on
            llm.script(reply.tool_calls(("respond", {"content": "x"})), reply.tool_calls(("no-response", {})))
            assert peer.turn("internal:quiet", "note this")["sent"] == []
            assert row(agent_dir, "internal:quiet") is None  # its save waits 2 s (debounced)...
            failed = peer.history("internal:quiet")[2]["content"]["output"]
            assert failed == {"error": "This channel does not support sending messages", "success": False}
        # ...and SIGINT runs them: the original's shutdown hook flushes every pending save
        assert json.loads(row(agent_dir, "internal:quiet")["history"])[0]["content"]["content"] == "note this"
        assert row(agent_dir, "discord:555|777")["last_activity"] is not None
        assert row(agent_dir, "internal:beat") is not None


def test_flush_writes_pending_saves_while_it_runs(original: Original, home: Path) -> None:
    agent_dir = original.init_root(home)
    original.mark_migrations_applied(home)
    with ScriptedLLM(default=reply.tool_calls(("no-response", {}))) as llm:
        point_engine(agent_dir, llm.base_url)
        with original.start(home) as peer:
            peer.turn("tui", "hi")
            assert row(agent_dir, "tui") is None  # its save waits 2 s (debounced)
            peer.flush()
            assert row(agent_dir, "tui")["channel"] == "tui"


def test_a_hung_turn_fails_with_the_originals_stderr_and_the_process_is_stopped(original: Original, home: Path) -> None:
    agent_dir = original.init_root(home)
    original.mark_migrations_applied(home)
    with ScriptedLLM(reply.tool_calls(("no-response", {}), delay=30)) as llm:
        point_engine(agent_dir, llm.base_url)
        peer = original.start(home)
        with pytest.raises(OriginalError, match=r"(?s)no answer in time.*Turn start"), peer:
            peer.turn("internal:slow", "wait", timeout=1)
        assert not peer.running


def test_without_npm_it_is_unavailable_in_one_line_naming_the_log(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    (cache / "node" / "half").mkdir(parents=True)  # a half install: no `complete` stamp
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    tarball = tmp_path / "source.tar.gz"
    tarball.write_bytes(b"never unpacked: npm is missing before that")
    with pytest.raises(originalkit.OriginalUnavailable) as caught:
        originalkit.install(cache, tarball)
    message = str(caught.value)
    assert "\n" not in message and "npm is not on PATH" in message and str(cache / "install.log") in message
    assert not (cache / "node").exists() and not (cache / "complete").exists()
    assert os.path.getsize(cache / "install.log") > 0
