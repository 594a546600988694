"""Step mode from Python: on_tool_call approves, edits, skips or mocks each tool call of a turn."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

import cireil
from cireil.runtime.engine.toolhook import ToolDecision
from cireil.runtime.recorder.model import RecordedTurn
from cireil.runtime.recorder.store import FORMAT, RECORDINGS_FILE
from cireil.testing.scripted_llm import ScriptedLLM, reply
from recorderkit import run_pytest
from turnkit import turn_agent


@pytest.fixture
def agent(tmp_path: Path, llm: ScriptedLLM):
    a = cireil.load(turn_agent(tmp_path, llm.base_url))
    yield a
    a.close()


def tool_results(body: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def test_each_call_is_approved_edited_skipped_or_mocked(agent, llm):
    (agent.directory / "workspace" / "other.md").write_text("Buy eggs.\n")
    llm.script(
        reply.tool_calls(
            ("read", {"path": "/workspace/notes.md"}),
            ("write", {"path": "/workspace/out.txt", "content": "x"}),
            ("list-dir", {"path": "/workspace"}),
            ("session-info", {}),
        ),
        reply.tool_calls(("respond", {"content": "done"})),
    )
    asked: list[tuple[str, dict, int]] = []

    def review(call: dict, step: int):
        asked.append((call["name"], call["input"], step))
        if call["name"] == "read":
            return ToolDecision.edit({"path": "/workspace/other.md"})
        if call["name"] == "write":
            return ToolDecision.skip("not today")
        if call["name"] == "list-dir":
            return ToolDecision.mock({"entries": ["invented.txt"], "success": True})
        return None

    outcome = agent.turn("go", on_tool_call=review)
    assert outcome.ended == "respond"
    assert [(n, s) for n, _, s in asked] == [
        ("read", 1),
        ("write", 1),
        ("list-dir", 1),
        ("session-info", 1),
        ("respond", 2),
    ]
    assert asked[0][1] == {"path": "/workspace/notes.md"}  # the hook sees what the model asked
    read, write, listing, info = tool_results(llm.requests[1].body)
    assert read["content"] == "Buy eggs.\n"  # ran with the edited arguments
    assert write["success"] is False and write["skipped"] is True and "not today" in write["error"]
    assert not (agent.directory / "workspace" / "out.txt").exists()
    assert listing == {"name": "list-dir", "entries": ["invented.txt"], "success": True}
    assert info == {"name": "session-info", "platform": "remote", "session_id": "notebook:main", "success": True}
    calls = [c for m in llm.requests[1].body["messages"] if m["role"] == "assistant" for c in m["tool_calls"]]
    assert json.loads(calls[0]["function"]["arguments"]) == {"path": "/workspace/other.md"}  # history shows what ran


def test_an_async_hook_and_a_wrong_answer(agent, llm):
    llm.script(reply.tool_calls(("session-info", {})), reply.tool_calls(("respond", {"content": "ok"})))

    async def review(call: dict, step: int):
        return "yes please" if call["name"] == "session-info" else None

    agent.turn("go", on_tool_call=review)
    (result,) = tool_results(llm.requests[1].body)
    assert result["success"] is False and "not a ToolDecision" in result["error"]


def test_an_interrupt_while_the_hook_decides_ends_the_turn_storing_nothing_of_it(agent, llm):
    llm.script(
        reply.tool_calls(("session-info", {})),
        reply.tool_calls(("write", {"path": "/workspace/late.txt", "content": "x"})),
        reply.tool_calls(("respond", {"content": "never"})),
    )
    waiting = threading.Event()
    release = threading.Event()

    def review(call: dict, step: int):
        if step == 2:
            waiting.set()
            release.wait(30)
        return None

    submitted = agent.submit_turn("go", on_tool_call=review)
    assert waiting.wait(30)
    assert submitted.cancel_and_wait()
    release.set()
    assert agent.session.history == []  # as the original: nothing of an interrupted turn (the recorder has it)
    assert not (agent.directory / "workspace" / "late.txt").exists()
    assert agent.turns()[-1].ended == "interrupted"


def test_the_recording_keeps_what_the_person_did_and_a_replay_does_it_again(agent, llm):
    (agent.directory / "workspace" / "other.md").write_text("Buy eggs.\n")
    llm.script(
        reply.tool_calls(
            ("read", {"path": "/workspace/notes.md"}),
            ("write", {"path": "/workspace/out.txt", "content": "x"}),
            ("list-dir", {"path": "/workspace"}),
        ),
        reply.tool_calls(("respond", {"content": "done"})),
    )

    def review(call: dict, step: int):
        return {
            "read": ToolDecision.edit({"path": "/workspace/other.md"}),
            "write": ToolDecision.skip(),
            "list-dir": ToolDecision.mock({"entries": ["invented.txt"], "success": True}),
        }.get(call["name"])

    agent.turn("go", on_tool_call=review)
    turn = agent.turns()[-1]
    assert [(c.name, c.action) for c in turn.calls] == [
        ("read", "edited"),
        ("write", "skipped"),
        ("list-dir", "mocked"),
        ("respond", "approved"),
    ]
    read = turn.calls[0]
    assert read.arguments == {"path": "/workspace/other.md"}  # what ran
    assert read.review["asked"] == {"path": "/workspace/notes.md"}  # what the model asked for
    assert turn.steps[0].tool_calls[0]["arguments"] == {"path": "/workspace/notes.md"}  # the reply as sent
    assert RecordedTurn.from_dict(turn.to_dict()).calls[1].action == "skipped"  # an exported test keeps it

    exported = agent.export_notebook(agent.session.id, agent.directory.parent / "session.ipynb")
    headings = [c["source"] for c in json.loads(exported.read_text())["cells"] if c["cell_type"] == "markdown"]
    assert "read (edited), write (skipped), list-dir (mocked)." in headings[-1]  # said where it is not redone

    replayed = agent.replay(turn.id, in_place=True)
    assert replayed.same, replayed.summary()  # the edit ran again, the skip and the mock gave the same results
    assert not (agent.directory / "workspace" / "out.txt").exists()  # skipped again

    exported = agent.export_test(turn.id, agent.directory.parent / "test_reviewed.py", fields=["read.content"])
    passed = run_pytest(exported)  # the edited read's content, the skip and the mock, all as recorded
    assert passed.returncode == 0 and "1 passed" in passed.stdout, passed.stdout + passed.stderr


def test_a_recording_of_format_1_is_migrated_in_place(tmp_path, llm):
    directory = turn_agent(tmp_path, llm.base_url)
    llm.script(reply.tool_calls(("session-info", {})), reply.tool_calls(("respond", {"content": "ok"})))
    first = cireil.load(directory)
    try:
        first.turn("go")
    finally:
        first.close()
    db = sqlite3.connect(directory / RECORDINGS_FILE)  # as cireil before step-mode reviews wrote it
    db.execute("ALTER TABLE calls DROP COLUMN review")
    db.executescript("DROP TABLE mcp_calls; DROP TABLE mcp_servers; ALTER TABLE turns DROP COLUMN mcp;")  # format 3's
    db.execute("UPDATE meta SET value = '1' WHERE key = 'format'")
    db.commit()
    db.close()
    again = cireil.load(directory)
    try:
        (turn,) = again.turns()
        assert [(c.name, c.review) for c in turn.calls] == [("session-info", None), ("respond", None)]
        assert again.recording.problem is None
    finally:
        again.close()
    db = sqlite3.connect(directory / RECORDINGS_FILE)
    assert db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() == (str(FORMAT),)
    db.close()


def test_a_mocked_result_is_a_json_object_as_written_or_the_text_itself():
    from cireil.kernel.magics.stepmode import mock_result

    assert mock_result('{"entries": [], "success": true}') == {"entries": [], "success": True}
    assert mock_result("  the shed is locked  ") == {"result": "  the shed is locked  ", "success": True}
    assert mock_result('["a list"]') == {"result": '["a list"]', "success": True}  # only an object is a result
    with pytest.raises(ValueError, match="not one"):
        mock_result('{"entries": [')
    with pytest.raises(ValueError, match="write the result"):
        mock_result("   ")
