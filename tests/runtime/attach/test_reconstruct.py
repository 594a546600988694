"""Turns the original ran before attaching, rebuilt from a sessions.db written as the original writes it
(tests/upstream_db.py) and recorded as reconstructed turns (runtime/attach/reconstruct.py); no Node needed."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

import cireil
import upstream_db as up
from cireil.render.recording import StepsView
from cireil.runtime.attach.listing import source_of, table
from cireil.runtime.attach.reconstruct import stored_turns
from cireil.runtime.recorder.store import RECORDINGS_FILE, RecordingStore
from recorderkit import run_pytest
from turnkit import turn_agent

SHOP = "internal:shop"
T0 = 1778000000000  # ms, as the original stamps messages


def original_agent(tmp_path: Path, base_url: str) -> Path:
    directory = turn_agent(tmp_path, base_url)
    up.create_original_db(directory / "sessions.db")
    up.fill(directory / "sessions.db", directory)
    return directory


def ms_iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def test_the_original_sessions_turns_are_rebuilt_marked_and_sessions_db_is_only_read(tmp_path, llm):
    directory = original_agent(tmp_path, llm.base_url)
    before = up.snapshot(directory / "sessions.db")
    agent = cireil.load(directory)
    try:
        done = agent.reconstruct()
        assert len(done.turns) == 4
        # the rows the original itself would refuse are named, one line each, and the rest is rebuilt
        assert len(done.problems) == 3 and all("internal:" in p or "discord:999" in p for p in done.problems)
        turns = {t.session_id: t for t in agent.turns("*")}
        assert set(turns) == {up.GUILD, up.DM, "tui", "internal:notes"}
        assert all(t.reconstructed for t in turns.values())

        guild = turns[up.GUILD]
        assert guild.text == "can you check what my garden notes say about the tomatoes?"
        assert guild.started == 1777629600.0 and guild.ended == "respond" and guild.model == "scripted-1"
        assert [s.tool_calls[0]["name"] for s in guild.steps] == ["read", "respond"]
        first, second = guild.steps
        # the request cireil builds for the history before each assistant message, streamed as a turn sends it
        assert first.request["prompt_cache_key"] == up.GUILD and first.request["stream"] is True
        roles = [m["role"] for m in first.request["messages"]]
        assert roles == ["system", "user", "user"]  # the system prompt, the user's message, the metadata
        assert "The channel id is: 1425768080998400016" in first.request["messages"][0]["content"]
        user_parts = first.request["messages"][1]["content"]
        assert any(p.get("type") == "image_url" for p in user_parts)  # the stored photo travels, as it did
        metadata = first.request["messages"][-1]["content"][0]["text"]
        assert metadata.startswith("Current date: 2026-05-01T10:00:00")  # the time of that model call, not today's
        assert [m["role"] for m in second.request["messages"]] == ["system", "user", "assistant", "tool", "user"]
        assert second.request["messages"][1] == first.request["messages"][1]
        assert "water every morning" in second.request["messages"][3]["content"]
        # replies and tool results are the stored messages
        assert first.reply["reasoning"] == "The notes live in /memories/garden.md; read them first."
        assert first.calls[0].result == {
            "content": "# Garden\n\n- tomatoes: water every morning\n",
            "path": "/memories/garden.md",
        }
        assert "wire" not in first.reply  # no proof of sent bytes: none were seen
        assert turns["internal:notes"].ended == "unfinished"  # a text reply ends no turn in the original

        # every view says it was rebuilt, never "as sent"
        assert source_of(guild).startswith("reconstructed (discord, from sessions.db")
        assert "reconstructed" in table(agent.turns("*"), production=True)
        view = StepsView(guild)
        assert "reconstructed from sessions.db" in view.text()
        assert "request as cireil rebuilds it, not as sent" in view.html() and "request as POSTed" not in view.html()

        again = agent.reconstruct()  # never twice for the same stored turn
        assert again.turns == [] and again.skipped == {"recorded already": 4}
        assert len(agent.turns("*")) == 4
    finally:
        agent.close()
    assert up.snapshot(directory / "sessions.db") == before


def test_session_and_since_choose_the_turns_and_a_bad_one_is_said(tmp_path, llm):
    agent = cireil.load(original_agent(tmp_path, llm.base_url))
    try:
        assert [t.session_id for t in agent.turns("*")] == []
        only_tui = agent.reconstruct(session="tui")
        assert len(only_tui.turns) == 1 and agent.turns("*")[0].session_id == "tui"
        recent = agent.reconstruct(since="2026-05-02T00:00:00+00:00")
        assert {t.session_id for t in agent.turns("*") if t.id in recent.turns} == {up.DM, "internal:notes"}
        assert recent.skipped == {"recorded already": 1, "before --since": 1}
        with pytest.raises(ValueError, match="not an ISO 8601 time"):
            agent.reconstruct(since="yesterday")
        with pytest.raises(ValueError, match=r"sessions\.db has no session 'discord:42'"):
            agent.reconstruct(session="discord:42")
    finally:
        agent.close()


def test_no_more_turns_than_the_recorder_keeps_the_newest_first(tmp_path, llm):
    directory = original_agent(tmp_path, llm.base_url)
    (directory / "config" / "cireil.toml").write_text("[recording]\nmax_turns = 2\n")
    agent = cireil.load(directory)
    try:
        done = agent.reconstruct()
        # evicting the oldest to make room would drop the person's turns, then these, rebuilt again next time
        assert sorted(t.session_id for t in agent.turns("*")) == ["internal:notes", "tui"]
        ((why, left),) = done.skipped.items()
        assert left == 2 and why.startswith("no room: [recording] max_turns = 2 in config/cireil.toml")
        assert done.evicted == 0 and any("no room" in line for line in done.lines())
    finally:
        agent.close()


def test_a_turn_the_proxy_recorded_is_not_rebuilt_again(tmp_path, llm):
    directory = original_agent(tmp_path, llm.base_url)
    store = RecordingStore(directory / RECORDINGS_FILE)
    started = datetime.fromisoformat("2026-05-03T09:20:00.500+00:00").timestamp()  # the tui turn's user message
    proxied = store.begin_turn("tui", "m", "p", None, {"production": {"via": "proxy"}}, started=started)
    store.end_turn(proxied, "respond", None, {}, 1.0)
    store.close()
    agent = cireil.load(directory)
    try:
        done = agent.reconstruct()
        assert done.skipped == {"recorded by the proxy": 1}
        assert sorted(t.session_id for t in agent.turns("*") if t.reconstructed) == sorted(
            [up.GUILD, up.DM, "internal:notes"]
        )
    finally:
        agent.close()


def shop_history(read_output: dict) -> list[dict]:
    """A turn of a persistent internal session, in the original's row format: read, then respond."""
    return [
        {"content": {"content": "what do I buy?", "type": "text"}, "role": "user", "timestamp": T0},
        {
            "content": {"id": "call_r1", "input": {"path": "/workspace/notes.md"}, "name": "read", "type": "toolCall"},
            "role": "assistant",
            "timestamp": T0 + 1500,
        },
        {
            "content": {"id": "call_r1", "name": "read", "output": read_output, "type": "toolResponse"},
            "role": "toolResponse",
            "timestamp": T0 + 1600,
        },
        {
            "content": {
                "id": "call_done",
                "input": {"content": "You need milk.", "final": True},
                "name": "respond",
                "type": "toolCall",
            },
            "role": "assistant",
            "timestamp": T0 + 3000,
        },
        {
            "content": {
                "id": "call_done",
                "name": "respond",
                "output": {"final": True, "sent": True},
                "type": "toolResponse",
            },
            "role": "toolResponse",
            "timestamp": T0 + 3100,
        },
    ]


def test_a_reconstructed_turn_replays_forks_and_exports_as_a_passing_test(tmp_path, llm):
    directory = turn_agent(tmp_path, llm.base_url)
    up.create_original_db(directory / "sessions.db")
    probe = cireil.load(directory)
    try:
        read_output = probe.call("read", {"path": "/workspace/notes.md"}).data
    finally:
        probe.close()
    db = sqlite3.connect(directory / "sessions.db", isolation_level=None)
    db.execute(
        "INSERT INTO sessions (id, channel, meta, history, opened_files, history_cursor, active_file_sections)"
        " VALUES (?, 'internal', '{}', ?, '[]', 0, '{}')",
        (SHOP, up.dumps(shop_history(read_output))),
    )
    db.close()
    agent = cireil.load(directory)
    try:
        (turn_id,) = agent.reconstruct().turns
        turn = next(t for t in agent.turns("*") if t.id == turn_id)
        assert turn.session_id == SHOP and turn.text == "what do I buy?" and turn.steps[0].latency == 1.5
        assert turn.steps[0].calls[0].duration == pytest.approx(0.1)

        replayed = agent.replay(turn)
        assert replayed.tool_calls == [("read", {"path": "/workspace/notes.md"}), ("respond", ANY_RESPOND)]
        assert not replayed.steps[0].differs  # read returns today what the session stored

        served = len(llm.requests)
        outcome = agent.fork(turn, 1, result={"content": "Buy eggs.", "path": "/workspace/notes.md"})
        assert outcome.ended == "respond" and len(llm.requests) == served  # offline: the stored replies answered
        (forked,) = agent.turns(outcome.session_id)
        assert forked.origin == {"turn": turn.id, "step": 1, "session": SHOP}
        assert forked.calls[0].result == {"content": "Buy eggs.", "path": "/workspace/notes.md"}
        assert json.dumps(forked.steps[0].request["messages"]).count("what do I buy?") == 1

        exported = agent.export_test(turn, tmp_path / "test_exported_shop.py", fields=["read.content"])
    finally:
        agent.close()
    passed = run_pytest(exported)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout


class _AnyRespond:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict) and other.get("content") == "You need milk."


ANY_RESPOND = _AnyRespond()


def test_stored_turns_start_at_each_kept_user_message():
    history = [
        {"role": "assistant"},  # before any user message: no turn
        {"role": "user"},
        {"role": "assistant"},
        {"role": "user", "persistent": False},  # a per-call context message starts nothing
        {"role": "toolResponse"},
        {"role": "user"},
    ]
    assert stored_turns(history) == [(1, 5), (5, 6)]


def test_cireil_reconstruct_on_the_command_line(tmp_path, llm):
    directory = original_agent(tmp_path, llm.base_url)
    run = subprocess.run(
        [sys.executable, "-m", "cireil", "reconstruct", str(directory), "--session", "tui"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("1 turn(s) rebuilt from sessions.db and recorded as reconstructed")
    bad = subprocess.run(
        [sys.executable, "-m", "cireil", "reconstruct", str(directory), "--since", "soon"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "nothing reconstructed: since 'soon' is not an ISO 8601 time" in bad.stderr
