"""A huge tool result an old row holds (written before cireil capped results, or by the original runtime)
is cut for the model in every request, with the note new results get; the row is never rewritten."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import cireil
import upstream_db as up
from cireil.runtime.toolkit.resultcap import RESULT_LIMIT
from cireil.testing.scripted_llm import ScriptedLLM, reply
from turnkit import turn_agent

HUGE = "0123456789abcdef" * 250_000  # 4 MB of text in one result
CALL = "call_huge0000000000000001"
OLD_HISTORY = [
    {"content": {"content": "fetch the big page", "type": "text"}, "role": "user", "timestamp": 1777800000000},
    {
        "content": {"id": CALL, "input": {"url": "https://example.test/"}, "name": "fetch", "type": "toolCall"},
        "role": "assistant",
        "timestamp": 1777800001000,
    },
    {
        "content": {"id": CALL, "name": "fetch", "output": {"body": HUGE, "status": 200}, "type": "toolResponse"},
        "role": "toolResponse",
        "timestamp": 1777800002000,
    },
    {"content": {"content": "Fetched it.", "type": "text"}, "role": "assistant", "timestamp": 1777800003000},
]
PLAIN = "a plain string result " * 40_000  # the original's results need not be objects


@pytest.fixture
def agent_dir(tmp_path: Path, llm: ScriptedLLM) -> Path:
    directory = turn_agent(tmp_path, llm.base_url)
    up.create_original_db(directory / "sessions.db")
    plain = json.loads(json.dumps(OLD_HISTORY[1:3]).replace(CALL, "call_plain000000000000001"))
    plain[1]["content"]["output"] = PLAIN
    db = sqlite3.connect(directory / "sessions.db", isolation_level=None)
    db.execute(
        "INSERT INTO sessions (id, channel, meta, history, opened_files, history_cursor, active_file_sections)"
        " VALUES ('tui', 'tui', '{}', ?, '[]', 0, '{}')",
        (up.dumps([*OLD_HISTORY, *plain]),),
    )
    db.close()
    return directory


def _stored(agent_dir: Path) -> list:
    db = sqlite3.connect(agent_dir / "sessions.db")
    try:
        (text,) = db.execute("SELECT history FROM sessions WHERE id = 'tui'").fetchone()
    finally:
        db.close()
    return json.loads(text)


def _tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m.get("role") == "tool"]


def test_an_old_rows_huge_result_is_cut_in_every_request_and_the_row_is_kept(agent_dir, llm):
    before = _stored(agent_dir)
    agent = cireil.load(agent_dir)
    try:
        llm.script(
            reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
            reply.tool_calls(("respond", {"content": "Done."})),
        )
        assert agent.turn("and now?", session="tui").ended == "respond"
        preview = agent.prompt(session="tui")
    finally:
        agent.close()
    assert len(llm.requests) == 2
    for recorded in llm.requests:
        size = len(json.dumps(recorded.body).encode())
        assert size < 2 * RESULT_LIMIT + 50_000, size  # two old results, each cut to the limit
        big, plain, *_ = _tool_messages(recorded.body)
        for message in (big, plain):
            assert len(message["content"].encode()) <= RESULT_LIMIT + 2_000
            sent = json.loads(message["content"])
            note = sent["resultTruncated"]
            assert note["limit"] == RESULT_LIMIT and "sessions.db" in note["savedAs"]
            assert f"over the {RESULT_LIMIT}-byte limit for one tool result" in note["note"]
        assert sent["result"].startswith("a plain string result") and "more characters cut" in sent["result"]
        big_sent = json.loads(big["content"])
        assert big_sent["status"] == 200 and big_sent["body"].startswith("0123456789abcdef")
        assert big_sent["resultTruncated"]["bytes"] > 4_000_000
    shown = [m for m in preview.model_request.messages if m.get("role") == "toolResponse"]
    assert "resultTruncated" in shown[0]["output"]  # %cireil prompt shows what is sent
    after = _stored(agent_dir)
    assert after[: len(before)] == before  # the old rows are what they were, whole
    assert after[2]["content"]["output"]["body"] == HUGE


def test_stored_results_under_the_limit_are_sent_as_they_are():
    from cireil.runtime.engine.history import TokenCache, shape_history

    small = {"id": "m2", "role": "toolResponse", "toolCallId": "c1", "name": "read", "output": {"content": "x"}}
    history = [
        {"id": "m0", "role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"id": "m1", "role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "input": {}}]},
        small,
    ]
    cache = TokenCache()
    shaped = shape_history(history, cache=cache, result_limit=1000)
    assert shaped.messages[2] is small
    big = {**small, "output": {"content": "y" * 5000, "success": True}}
    history[2] = big
    first = shape_history(history, cache=cache, result_limit=1000).messages[2]
    cache.sweep()
    again = shape_history(history, cache=cache, result_limit=1000).messages[2]
    assert again is first  # cut once, not on every model call
    assert first["output"]["success"] is True and len(json.dumps(first["output"])) <= 1000
    assert big["output"]["content"] == "y" * 5000  # the stored message is never changed
