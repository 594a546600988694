"""Enablement of already discovered MCP tools follows tools.toml reloads (spec "Reload"): enable, disable and
enable again apply at the next call or turn, and never re-discover (definitions stay fixed until restart)."""

from __future__ import annotations

from pathlib import Path

import pytest

import cireil
from cireil import Tool
from cireil.params import Params
from cireil.runtime.base.errors import UnknownToolError
from cireil.testing.scripted_llm import reply
from conftest import make_agent
from mcp_peers.launch import mcp_toml
from turnkit import engine_toml

pytest_plugins = ("mcp_peers.fixtures",)

ON = "respond = true\nlist-dir = true\nmcp__q__echo = true\n"
OFF = "respond = true\nlist-dir = true\nmcp__q__echo = false\n"


def _agent_dir(tmp_path: Path, rogue, tools: str, base_url: str | None = None) -> Path:
    agent = make_agent(tmp_path, tools)
    (agent / "config" / "mcp.toml").write_text(mcp_toml({"q": rogue.url("/quirky")}))
    if base_url is not None:
        (agent / "config" / "engine.toml").write_text(engine_toml(base_url))
    return agent


def _discoveries(rogue) -> tuple[int, int]:
    methods = rogue.methods("/quirky")
    return methods.count("initialize"), methods.count("tools/list")


def test_calls_follow_enable_disable_and_enable_again_without_rediscovery(tmp_path, rogue):
    agent = cireil.load(_agent_dir(tmp_path, rogue, OFF))
    tools_toml = agent.directory / "config" / "tools.toml"
    try:
        discovered = _discoveries(rogue)
        assert [t.name for t in agent.tools] == ["respond", "list-dir"]
        with pytest.raises(UnknownToolError, match="not enabled"):
            agent.call("mcp__q__echo", x=1)

        tools_toml.write_text(ON)
        first = agent.call("mcp__q__echo", x=1)
        assert first["content"][0]["text"] == '{"x": 1}'
        assert any("enabled tools are now respond, list-dir, mcp__q__echo" in n for n in first.notices)

        tools_toml.write_text(OFF)
        with pytest.raises(UnknownToolError, match="not enabled"):
            agent.call("mcp__q__echo", x=2)
        assert "mcp__q__echo" not in [t.name for t in agent.tools]

        tools_toml.write_text(ON)
        assert agent.call("mcp__q__echo", x=3)["content"][0]["text"] == '{"x": 3}'
        # the tool came back from what load discovered: no new session, no new listing
        assert _discoveries(rogue) == discovered
    finally:
        agent.close()


def _offered(body: dict) -> list[str]:
    return [t["function"]["name"] for t in body["tools"]]


def test_turns_offer_and_authorize_the_tool_as_tools_toml_says(tmp_path, rogue, llm):
    agent = cireil.load(_agent_dir(tmp_path, rogue, OFF, llm.base_url))
    tools_toml = agent.directory / "config" / "tools.toml"
    call_then_respond = (
        reply.tool_calls(("mcp__q__echo", {"x": "hi"})),
        reply.tool_calls(("respond", {"content": "done"})),
    )
    try:
        discovered = _discoveries(rogue)
        calls_before = rogue.methods("/quirky").count("tools/call")

        llm.script(*call_then_respond)  # disabled: not offered, and a call anyway is refused
        agent.turn("one")
        assert "mcp__q__echo" not in _offered(llm.requests[0].body)
        (refused,) = [m for m in agent.session.history if m["role"] == "toolResponse" and m["name"] == "mcp__q__echo"]
        assert refused["output"]["success"] is False and "not available" in refused["output"]["error"]

        tools_toml.write_text(ON)
        llm.script(*call_then_respond)
        agent.turn("two")
        assert "mcp__q__echo" in _offered(llm.requests[2].body)
        assert rogue.methods("/quirky").count("tools/call") == calls_before + 1

        tools_toml.write_text(OFF)
        llm.script(*call_then_respond)
        agent.turn("three")
        assert "mcp__q__echo" not in _offered(llm.requests[4].body)
        assert rogue.methods("/quirky").count("tools/call") == calls_before + 1  # refused before the wire

        tools_toml.write_text(ON)
        llm.script(*call_then_respond)
        agent.turn("four")
        assert "mcp__q__echo" in _offered(llm.requests[6].body)
        assert rogue.methods("/quirky").count("tools/call") == calls_before + 2
        assert _discoveries(rogue) == discovered
    finally:
        agent.close()


def test_a_turn_in_progress_keeps_the_mcp_tool_it_started_with(tmp_path, rogue, llm):
    async def disable(args, ctx):
        (ctx.agent_dir / "config" / "tools.toml").write_text(OFF + "disable = true\n")
        return {"success": True}

    toggle = Tool("disable", "Turn the echo tool off in tools.toml.", Params(), disable)
    agent = cireil.load(_agent_dir(tmp_path, rogue, ON + "disable = true\n", llm.base_url), tools=[toggle])
    try:
        llm.script(
            reply.tool_calls(("disable", {})),
            reply.tool_calls(("mcp__q__echo", {"x": "still"})),
            reply.tool_calls(("respond", {"content": "ok"})),
        )
        agent.turn("go")
        echoed = [m for m in agent.session.history if m["role"] == "toolResponse" and m["name"] == "mcp__q__echo"]
        assert echoed[0]["output"]["content"][0]["text"] == '{"x": "still"}'
        assert "mcp__q__echo" in _offered(llm.requests[2].body)  # the same turn's later request still offers it
        llm.script(reply.tool_calls(("respond", {"content": "next"})))
        agent.turn("next turn")
        assert "mcp__q__echo" not in _offered(llm.requests[3].body)
    finally:
        agent.close()
