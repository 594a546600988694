"""Hostile MCP servers: depth bombs in listings and results, schemas that are not objects."""

from __future__ import annotations

import time

import cireil
from test_mcp_agent import agent_with, load_error

pytest_plugins = ("mcp_peers.fixtures",)

GENEROUS_S = 30.0  # a loopback round trip plus parsing a few hundred KB; 10x what it takes here


def test_a_deep_listing_is_a_clear_load_error(tmp_path, rogue):
    started = time.monotonic()
    message = load_error(tmp_path, {"deep": rogue.url("/deeplist")})
    assert time.monotonic() - started < GENEROUS_S
    assert message.startswith("config/mcp.toml:1: server 'deep': ")
    assert "nested deeper than 100 levels" in message


def test_an_input_schema_that_is_not_an_object_fails_that_tool_at_discovery(tmp_path, rogue):
    message = load_error(tmp_path, {"odd": rogue.url("/schemas")})
    assert message == (
        "config/mcp.toml:1: server 'odd': tool 'stringy' has an inputSchema of type 'string'; "
        'tool arguments must be an object schema (type "object")'
    )
    report = cireil.dry_run(agent_with(tmp_path / "b", {"odd": rogue.url("/schemas")}, "list-dir = true\n"))
    messages = [str(e) for e in report.errors]
    assert any("tool 'listy' has an inputSchema that is not a JSON Schema object but list" in m for m in messages)


def test_a_deep_result_is_a_failed_call_not_a_recursion_error(tmp_path, rogue):
    agent = cireil.load(agent_with(tmp_path, {"h": rogue.url("/hostile")}, "mcp__h__deep = true\n"))
    try:
        result = agent.call("mcp__h__deep")
        assert not result.success
        assert "nested deeper than 100 levels" in result["error"]
        result._repr_mimebundle_()
    finally:
        agent.close()
