"""Read supersession as the original does it, end to end: what each model call sends, and what sessions.db keeps.

The original (packages/runtime/src/engine/prune.ts, called from engine/index.ts at every model call) replaces
every earlier `read` result of a path read again by `{"path": ..., "superseded": true}` once the model's context
window is known, and saves the rewritten history. The results of the model's latest reply are held apart until
the model answers them, so the request that carries a re-read still carries the earlier read whole.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import cireil
from cireil.testing.scripted_llm import ScriptedLLM, reply
from turnkit import turn_agent

READ = ("read", {"path": "/workspace/notes.md"})
NOTES = "# Notes\n\nBuy milk.\n"
STUB = {"path": "/workspace/notes.md", "superseded": True}


@pytest.fixture
def agent(tmp_path: Path, llm: ScriptedLLM):
    a = cireil.load(turn_agent(tmp_path, llm.base_url, model_extra="contextWindow = 100000\n"))
    yield a
    a.close()


def _read_twice(agent, llm: ScriptedLLM) -> None:
    """Two turns that each read notes.md once and answer."""
    llm.script(reply.tool_calls(READ), reply.tool_calls(("respond", {"content": "milk"})))
    agent.turn("what do I need?")
    llm.script(reply.tool_calls(READ), reply.tool_calls(("respond", {"content": "still milk"})))
    agent.turn("again?")


def _call_ids(agent) -> list[str]:
    return [p["id"] for m in agent.session.history if m["role"] == "assistant" for p in m["content"]]


def _user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _call(call_id: str, name: str, arguments: dict) -> dict:
    arguments_json = json.dumps(arguments, separators=(",", ":"))
    return {
        "role": "assistant",
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments_json}}],
    }


def _result(call_id: str, payload: dict) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(payload, separators=(",", ":"))}


def _sent(body: dict) -> list[dict]:
    """The history part of a request: without the system prompt and the metadata message (the clock's)."""
    messages = body["messages"]
    assert messages[0]["role"] == "system"
    assert messages[-1]["content"][0]["text"].startswith("Current date: ")
    return messages[1:-1]


def _stored_outputs(agent_dir: Path, session_id: str = "internal:notebook:main") -> list:
    with sqlite3.connect(agent_dir / "sessions.db") as db:
        (history,) = db.execute("SELECT history FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return [json.loads(history)[i]["content"].get("output") for i in range(len(json.loads(history)))]


def _stored_history_text(agent_dir: Path) -> str:
    with sqlite3.connect(agent_dir / "sessions.db") as db:
        return db.execute("SELECT history FROM sessions WHERE id = 'internal:notebook:main'").fetchone()[0]


def test_the_request_that_carries_a_re_read_still_carries_the_first_read_whole(agent, llm):
    _read_twice(agent, llm)
    c1, r1, c2, _ = _call_ids(agent)
    whole = {"name": "read", "content": NOTES, "path": "/workspace/notes.md", "size": 19, "success": True}
    # the second turn's second call: its read result is the model's to answer, the first read is not stubbed yet
    assert _sent(llm.requests[3].body) == [
        _user("what do I need?"),
        _call(c1, "read", READ[1]),
        _result(c1, whole),
        _call(r1, "respond", {"content": "milk"}),
        _result(r1, {"name": "respond", "final": True, "sent": True}),
        _user("again?"),
        _call(c2, "read", READ[1]),
        _result(c2, whole),
    ]
    # the original saves that turn as it sent it: both reads whole
    assert _stored_outputs(agent.directory)[2] == {k: v for k, v in whole.items() if k != "name"}
    assert '"output":{"content":"# Notes' in _stored_history_text(agent.directory)


def test_the_next_call_sends_the_originals_stub_and_sessions_db_keeps_it(agent, llm):
    _read_twice(agent, llm)
    llm.script(reply.tool_calls(("respond", {"content": "bye"})))
    agent.turn("thanks")
    c1, r1, c2, c3, _ = _call_ids(agent)
    whole = {"name": "read", "content": NOTES, "path": "/workspace/notes.md", "size": 19, "success": True}
    assert _sent(llm.requests[-1].body) == [
        _user("what do I need?"),
        _call(c1, "read", READ[1]),
        _result(c1, {"name": "read", "path": "/workspace/notes.md", "superseded": True}),
        _call(r1, "respond", {"content": "milk"}),
        _result(r1, {"name": "respond", "final": True, "sent": True}),
        _user("again?"),
        _call(c2, "read", READ[1]),
        _result(c2, whole),
        _call(c3, "respond", {"content": "still milk"}),
        _result(c3, {"name": "respond", "final": True, "sent": True}),
        _user("thanks"),
    ]
    # saved as the original saves it: the stub in place of the output, exactly its shape and key order
    assert '"output":{"path":"/workspace/notes.md","superseded":true}' in _stored_history_text(agent.directory)
    outputs = _stored_outputs(agent.directory)
    assert outputs[2] == STUB and outputs[7]["content"] == NOTES
    assert agent.session.history[2]["output"] == STUB
    agent.close()
    again = cireil.load(agent.directory)
    try:
        assert again.session.history[2]["output"] == STUB and again.session.history[7]["output"]["content"] == NOTES
    finally:
        again.close()


def test_the_preview_shows_the_stub_and_changes_nothing(agent, llm):
    _read_twice(agent, llm)
    stored = _stored_history_text(agent.directory)
    prepared = agent.prompt()
    tool_results = [m for m in prepared.body["messages"] if m["role"] == "tool"]
    assert json.loads(tool_results[0]["content"]) == {"name": "read", **STUB}
    assert agent.session.history[2]["output"]["content"] == NOTES
    assert _stored_history_text(agent.directory) == stored


def test_a_failed_turn_takes_its_supersession_back(agent, llm):
    _read_twice(agent, llm)
    stored = _stored_outputs(agent.directory)
    refused = reply.error(400, "the provider refuses this request")
    llm.script(refused, refused, refused)  # the first try and maxGenerationRetries = 2 more
    with pytest.raises(cireil.CireilError, match="refuses"):
        agent.turn("thanks")
    # the failed call was sent with the stub, as the original sends it
    assert json.loads(llm.requests[-1].body["messages"][3]["content"]) == {"name": "read", **STUB}
    # the original restores its turn snapshot: the read is whole again in memory, and the row never had the stub
    assert agent.session.history[2]["output"]["content"] == NOTES
    assert _stored_outputs(agent.directory)[: len(stored)] == stored


def test_without_a_known_context_window_nothing_is_superseded(tmp_path, llm):
    agent = cireil.load(turn_agent(tmp_path, llm.base_url))
    try:
        _read_twice(agent, llm)
        llm.script(reply.tool_calls(("respond", {"content": "bye"})))
        agent.turn("thanks")
        assert "superseded" not in json.dumps(llm.requests[-1].body)
        assert "superseded" not in _stored_history_text(agent.directory)
    finally:
        agent.close()


def test_within_one_turn_the_stub_comes_once_the_model_answered_the_re_read(agent, llm):
    llm.script(
        reply.tool_calls(READ),
        reply.tool_calls(READ),
        reply.tool_calls(("list-dir", {"path": "/workspace"})),
        reply.tool_calls(("respond", {"content": "done"})),
    )
    agent.turn("read it twice")
    calls = [json.dumps(r.body["messages"]) for r in llm.requests]
    assert [c.count("Buy milk.") for c in calls] == [0, 1, 2, 1]  # the third call answers the re-read: stubbed
    assert '\\"superseded\\":true' in calls[3]
    assert "superseded" in _stored_history_text(agent.directory)
