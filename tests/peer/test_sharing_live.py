"""One agent used by cireil while the original CireilClaw runs it: nothing cireil reports stored is lost.

The original runs for real (tests/originalkit.py): its startup loads every session into memory, its scheduler
runs a `main` cron job and the heartbeat and saves them from memory, a Discord message sets lastActivity, and
its shutdown flushes. cireil meanwhile writes what it may and refuses, before anything is stored, what the
original would overwrite. At the end every turn cireil reported stored is in sessions.db.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import cireil
from cireil.runtime.sessions.store import SessionReadOnly
from cireil.testing.scripted_llm import ScriptedLLM, reply
from originalkit import Original, point_engine

CRON = """\
[[jobs]]
id = "tidy"
prompt = "Tidy the ops notes."
execution = "main"
target = "internal:ops"
delivery = "none"
schedule = { every = 86400 }
"""
HEARTBEAT = "enabled = true\ninterval = 86400\n"  # target "last" by default
DISCORD = "discord:1425768080998400016|1174109840998400016"


def rows(agent_dir: Path) -> dict[str, tuple]:
    db = sqlite3.connect(agent_dir / "sessions.db")
    try:
        return {r[0]: (json.loads(r[1]), r[2]) for r in db.execute("SELECT id, history, last_activity FROM sessions")}
    finally:
        db.close()


def user_texts(history: list[dict]) -> list[str]:
    out = []
    for message in history:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, dict) and content.get("type") == "text":
            out.append(content["content"])
    return out


def wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def agent_dir(original: Original, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    directory = original.init_root(home, "Shared Agent", preset="standard")
    original.mark_migrations_applied(home)
    (directory / "config" / "cron.toml").write_text(CRON)
    (directory / "config" / "heartbeat.toml").write_text(HEARTBEAT)
    (directory / "tasks" / "HEARTBEAT.md").write_text("Check on things.\n")
    return directory


def test_both_running_at_once_nothing_cireil_stored_is_lost(original: Original, agent_dir: Path) -> None:
    home = agent_dir.parents[2]
    stored: dict[str, list[str]] = {}  # session -> what cireil reported stored there, in order
    with ScriptedLLM(default=reply.tool_calls(("no-response", {}))) as llm:
        point_engine(agent_dir, llm.base_url)
        agent = cireil.load(agent_dir)
        try:
            for session in ("internal:ops", "notebook:old"):  # both loaded by the original when it starts
                llm.script(reply.tool_calls(("respond", {"content": "ok"})))
                agent.turn(f"before the original: {session}", session=session)
                stored.setdefault(session, []).append(f"before the original: {session}")
        finally:
            agent.close()

        with original.start(home) as peer:
            agent = cireil.load(agent_dir)
            try:
                assert any("open in another process" in str(w) for w in agent.warnings)
                asked = len(llm.requests)
                # its main cron job runs in internal:ops and saves it from memory: refused before the model
                with pytest.raises(SessionReadOnly, match=r"the cron job 'tidy'"):
                    agent.turn("lost if stored", session="internal:ops")
                # no Discord activity yet: its heartbeat's target "last" may pick a loaded session
                with pytest.raises(SessionReadOnly, match=r'heartbeat.*target "last"'):
                    agent.turn("lost if stored", session="notebook:old")
                assert len(llm.requests) == asked
                before = rows(agent_dir)
                assert "lost if stored" not in json.dumps(before)

                time.sleep(2.2)  # the original has long read its rows: a session made now is not in its memory
                rounds = 3
                for n in range(rounds):
                    llm.script(reply.tool_calls(("respond", {"content": f"round {n}"})))
                    text = f"cireil round {n}"
                    assert agent.turn(text, session="notebook:mine").ended == "respond"
                    stored.setdefault("notebook:mine", []).append(text)
                    # the original works meanwhile: its cron job, a Discord message, its heartbeat, its saves
                    llm.script(reply.tool_calls(("no-response", {})))
                    peer.cron("tidy")
                    llm.script(reply.tool_calls(("no-response", {})))
                    peer.turn(DISCORD, f"discord round {n}")
                    llm.script(reply.tool_calls(("no-response", {})))
                    peer.heartbeat()
                    peer.flush()
                # now a Discord session has the newest activity: "last" is that one, the loaded notebook is free
                llm.script(reply.tool_calls(("respond", {"content": "ok"})))
                agent.turn("after Discord spoke", session="notebook:old")
                stored["notebook:old"].append("after Discord spoke")
            finally:
                agent.close()
            llm.script(reply.tool_calls(("no-response", {})))
            peer.heartbeat()
        # stopped: its shutdown flushed everything it had in memory

        final = rows(agent_dir)
        written = lost = 0
        for session, texts in stored.items():
            row_id = "internal:" + session if session.startswith("notebook:") else session
            have = user_texts(final[row_id][0])
            for text in texts:
                written += 1
                lost += text not in have
        assert (written, lost) == (6, 0)
        print(f"\nsharing with the running original: {rounds} rounds, {written} turns stored by cireil, {lost} lost")
        ops = user_texts(final["internal:ops"][0])
        assert ops.count("Tidy the ops notes.") == rounds and "lost if stored" not in ops
        assert user_texts(final[DISCORD][0])[-rounds:] == [f"discord round {n}" for n in range(rounds)]
        assert final[DISCORD][1] is not None  # set by the original's Discord messages only
        assert final["internal:notebook:mine"][1] is None and final["internal:notebook:old"][1] is None


def test_an_original_that_starts_during_a_turn_gets_no_half_turn_and_nothing_is_lost(
    original: Original, agent_dir: Path
) -> None:
    home = agent_dir.parents[2]
    release = threading.Event()

    def slow(body: dict):
        release.wait(60)  # the model "thinks" until the original has started
        return reply.tool_calls(("respond", {"content": "late"}))

    with ScriptedLLM(default=reply.tool_calls(("no-response", {}))) as llm:
        point_engine(agent_dir, llm.base_url)
        agent = cireil.load(agent_dir)
        try:
            llm.script(reply.tool_calls(("respond", {"content": "first"})))
            agent.turn("stored before", session="internal:ops")
            before = rows(agent_dir)["internal:ops"]
            llm.default = slow
            submitted = agent.submit_turn("started alone", session="internal:ops")
            wait_for(lambda: len(llm.requests) >= 2)
            with original.start(home) as peer:
                release.set()
                with pytest.raises(SessionReadOnly, match=r"the cron job 'tidy'"):
                    submitted.result(timeout=60)
                assert rows(agent_dir)["internal:ops"] == before  # no user message, no half turn
                assert [m["role"] for m in agent.session_for("internal:ops").history] == [
                    "user",
                    "assistant",
                    "toolResponse",
                ]
                llm.default = reply.tool_calls(("no-response", {}))
                peer.cron("tidy")
            ops = user_texts(rows(agent_dir)["internal:ops"][0])
            assert ops == ["stored before", "Tidy the ops notes."]
        finally:
            agent.close()
