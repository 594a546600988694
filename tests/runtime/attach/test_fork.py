"""`agent.fork(turn, step, result=...)` on a turn the proxy recorded: the history it starts from is read back
from the turn's first recorded request (attach/history.py), since the original's session and its message ids
never went through cireil."""

from __future__ import annotations

import json

import pytest

import cireil
from attachkit import post_chat
from cireil.runtime.attach.history import history_before
from cireil.runtime.attach.proxy import ProxyServer
from cireil.runtime.attach.state import Upstream
from cireil.testing.scripted_llm import reply
from turnkit import turn_agent

SESSION = "discord:777"
EARLIER = [
    {"role": "user", "content": "an earlier message about eggs"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "old_1", "type": "function", "function": {"name": "respond", "arguments": '{"content":"noted"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "old_1", "content": json.dumps({"name": "respond", "success": True})},
]


def body(messages: list[dict]) -> bytes:
    sent = [
        {"role": "system", "content": "prompt"},
        *messages,
        {"role": "user", "content": "<opened_files>none</opened_files>"},
        {"role": "user", "content": "Current date: today"},
    ]
    return json.dumps({"messages": sent, "model": "scripted-1", "prompt_cache_key": SESSION}).encode()


def test_a_proxy_recorded_turn_forks_from_its_step_with_a_substituted_result(tmp_path, llm):
    agent_dir = turn_agent(tmp_path, llm.base_url)
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"}, "call_r")),
        reply.tool_calls(("respond", {"content": "you need milk"}, "call_done")),
    )
    own = {"role": "user", "content": "what do I buy?"}
    call = {
        "id": "call_r",
        "type": "function",
        "function": {"name": "read", "arguments": '{"path":"/workspace/notes.md"}'},
    }
    result = {"role": "tool", "tool_call_id": "call_r", "content": json.dumps({"name": "read", "content": "Buy milk."})}
    with ProxyServer(agent_dir, upstreams={"default": Upstream("default", "openai", llm.base_url)}) as proxy:
        asked = {"role": "assistant", "content": None, "tool_calls": [call]}
        assert post_chat(proxy.port, body([*EARLIER, own])) == 200
        assert post_chat(proxy.port, body([*EARLIER, own, asked, result])) == 200
        assert proxy.drain()
    agent = cireil.load(agent_dir)
    try:
        (turn,) = [t for t in agent.turns("*") if t.session_id == SESSION]
        history = history_before(turn)
        assert [m["role"] for m in history] == ["user", "assistant", "toolResponse"]
        assert history[0]["content"][0]["text"] == "an earlier message about eggs"
        assert history[1]["content"][0] == {
            "type": "toolCall",
            "id": "old_1",
            "name": "respond",
            "input": {"content": "noted"},
        }
        assert history[2]["name"] == "respond" and history[2]["output"] == {"success": True}

        served = len(llm.requests)
        outcome = agent.fork(turn, 1, result={"success": True, "content": "Buy eggs."})
        assert outcome.ended == "respond" and outcome.steps == 2
        assert len(llm.requests) == served  # offline: the recorded replies answered
        (forked,) = agent.turns(outcome.session_id)
        assert forked.origin == {"turn": turn.id, "step": 1, "session": SESSION}
        sent = json.dumps(forked.steps[0].request["messages"])
        assert "an earlier message about eggs" in sent  # the history from the recorded request came along
        assert sent.count("what do I buy?") == 1  # ... and the turn's own message once, as the fork's
        assert "Current date: today" not in sent  # the original's volatile tail is not history
        assert forked.calls[0].result == {"success": True, "content": "Buy eggs."}
        tool_results = [m for m in forked.steps[1].request["messages"] if m.get("role") == "tool"]
        assert "Buy eggs." in tool_results[-1]["content"]
    finally:
        agent.close()


def test_a_notebook_turn_has_no_request_history_to_read(tmp_path):
    class Turn:
        id, origin, steps, text = 3, None, [], "x"

    with pytest.raises(ValueError, match="turn 3 is not a production turn"):
        history_before(Turn())
