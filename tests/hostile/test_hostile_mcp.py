"""Hostile MCP servers: depth bombs in listings and results, schemas that are not objects."""

from __future__ import annotations

import time

import cireil
from cireil.render import result_bundle
from mcpkit import agent_with, load_error

pytest_plugins = ("mcp_peers.fixtures",)

GENEROUS_S = 30.0  # a loopback round trip plus parsing a few hundred KB; 10x what it takes here


def test_a_deep_listing_is_a_clear_load_error(tmp_path, rogue):
    started = time.monotonic()
    message = load_error(tmp_path, {"deep": rogue.url("/deeplist")})
    assert time.monotonic() - started < GENEROUS_S
    assert message.startswith("config/mcp.toml:1: server 'deep': ")
    assert "nested deeper than 100 levels" in message


def test_an_input_schema_that_is_not_an_object_leaves_out_that_tool_only(tmp_path, rogue):
    # one tool's bad schema must not cost the server's other tools: the tool is named and left out
    agent_dir = agent_with(tmp_path, {"odd": rogue.url("/schemas")}, "list-dir = true\n")
    report = cireil.dry_run(agent_dir)
    assert report.ok
    warnings = [str(i) for i in report.issues if i.severity == "warning"]
    assert (
        "config/mcp.toml:1: warning: server 'odd': tool 'stringy' has an inputSchema of type 'string'; "
        'tool arguments must be an object schema (type "object"); this tool is left out, the server\'s other '
        "tools work"
    ) in warnings
    assert any("tool 'listy' has an inputSchema that is not a JSON Schema object but list" in w for w in warnings)
    agent = cireil.load(agent_dir)
    agent.close()


def test_a_deep_result_is_a_failed_call_not_a_recursion_error(tmp_path, rogue):
    agent = cireil.load(agent_with(tmp_path, {"h": rogue.url("/hostile")}, "mcp__h__deep = true\n"))
    try:
        result = agent.call("mcp__h__deep")
        assert not result.success
        assert "nested deeper than 100 levels" in result["error"]
        result_bundle(result)
    finally:
        agent.close()


def test_a_huge_result_is_cut_for_the_model_kept_whole_on_disk_and_not_resent(tmp_path, rogue):
    import json

    from cireil.testing.scripted_llm import ScriptedLLM, reply
    from mcp_peers.launch import mcp_toml
    from turnkit import turn_agent

    size = 20 * 1024 * 1024
    with ScriptedLLM() as llm:
        root = turn_agent(tmp_path, llm.base_url, tools="respond = true\nmcp__h__huge = true\n")
        (root / "config" / "mcp.toml").write_text(mcp_toml({"h": rogue.url("/hostile")}))
        agent = cireil.load(root)
        try:
            llm.script(
                reply.tool_calls(("mcp__h__huge", {"size": size})),
                reply.tool_calls(("respond", {"content": "done"})),
                reply.tool_calls(("respond", {"content": "again"})),
            )
            assert agent.turn("fetch it").ended == "respond"
            assert agent.turn("and now?").ended == "respond"
            sizes = [len(json.dumps(r.body)) for r in llm.requests]
            assert max(sizes) < 1024 * 1024, sizes  # was 20 MB in every request after the call
            tool_msg = next(m for m in llm.requests[1].body["messages"] if m["role"] == "tool")
            sent = json.loads(tool_msg["content"])
            note = sent["resultTruncated"]
            assert note["bytes"] > size and note["savedAs"].startswith("<agent dir>/.cireil/results/")
            saved = root / note["savedAs"].removeprefix("<agent dir>/")
            whole = json.loads(saved.read_text())  # the server's answer as it came: too big to parse in memory
            assert len(whole["result"]["content"][0]["text"]) == size  # the person has all of it
            assert sent["content"][0]["text"].startswith('{"jsonrpc": "2.0"')  # the model sees its beginning
            assert [p.name for p in saved.parent.iterdir()] == [saved.name]  # kept once: the turn had nothing to cut
            assert (root / "sessions.db").stat().st_size < 5 * 1024 * 1024
            assert not (root / "workspace" / ".cireil").exists()
        finally:
            agent.close()
