"""MCP tools end to end against real peers on loopback: the official SDK server in every mode, and a
rogue server for what the SDK server never does (redirects, keepalive floods, odd framing, lies)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError, UnknownToolError
from mcp_peers.launch import mcp_toml, sdk_server
from mcpkit import agent_with, load, load_error

pytest_plugins = ("mcp_peers.fixtures",)  # the SDK and rogue servers


# -- the SDK server, in SSE and JSON modes, stateful and stateless --------------------------------
def test_tools_are_discovered_called_and_failures_marked(tmp_path, sdk_url):
    agent = load(tmp_path, {"demo": sdk_url})
    try:
        add = agent.tool("mcp__demo__add")
        assert add.origin == "mcp:demo 2026-07-28"  # the SDK 2.3.0 server is dual-era: the probe finds it modern
        assert add.parameters["properties"]["a"]["type"] == "integer"  # the remote inputSchema, as is
        assert set(add.parameters["required"]) == {"a", "b"}
        assert "Add two numbers." in add.description
        assert "Demo server: use add for sums." in add.description  # the server's instructions
        result = agent.call("mcp__demo__add", a=2, b=3)
        assert result.success
        assert result["content"] == [{"type": "text", "text": "5"}]
        assert result["structuredContent"] == {"result": 5}
        # the local name is sanitised; the call uses the remote name "ns.dotted-name"
        assert agent.call("mcp__demo__ns_dotted-name")["content"][0]["text"] == "dot"
        failed = agent.call("mcp__demo__fail", msg="boom")
        assert not failed.success
        assert "boom" in failed["error"] or "fail" in failed["error"]
        assert failed["content"][0]["type"] == "text"
        # the server validates arguments; its refusal is a failed result, not a crash
        assert not agent.call("mcp__demo__add", a="x", b=1).success
    finally:
        agent.close()


def test_mcp_tools_must_be_enabled_by_name(tmp_path, sdk_sse):
    agent = load(tmp_path, {"demo": sdk_sse}, tools="list-dir = true\nmcp__demo__add = false\n")
    try:
        assert [t.name for t in agent.tools] == ["list-dir"]
        with pytest.raises(UnknownToolError, match="not enabled"):
            agent.tool("mcp__demo__add")
    finally:
        agent.close()
    message = load_error(tmp_path / "b", {"demo": sdk_sse}, tools="mcp__demo__nope = false\n")
    assert message == "config/tools.toml:1: unknown tool 'mcp__demo__nope': server 'demo' does not advertise it"
    message = load_error(tmp_path / "c", {"demo": sdk_sse}, tools="mcp__demo__ad = false\n")
    assert message.endswith("server 'demo' does not advertise it (did you mean 'mcp__demo__add'?)")


def test_images_audio_and_structured_content_are_kept_as_json(tmp_path, sdk_sse):
    tools = "mcp__demo__pixel = true\nmcp__demo__beep = true\nmcp__demo__weather = true\n"
    agent = load(tmp_path, {"demo": sdk_sse}, tools=tools)
    try:
        image = agent.call("mcp__demo__pixel")["content"][0]
        assert image["type"] == "image" and image["mimeType"] == "image/png" and image["data"].startswith("iVBOR")
        assert agent.call("mcp__demo__beep")["content"][0]["type"] == "audio"
        weather = agent.call("mcp__demo__weather", city="Oslo")
        assert weather["structuredContent"] == {"city": "Oslo", "temperature": 21, "tags": ["mild", "dry"]}
        json.dumps(weather.data)  # the whole result is plain JSON
    finally:
        agent.close()


def test_a_call_past_its_timeout_fails_and_is_cancelled_on_the_wire(tmp_path, sdk_sse, mcp_marker):
    mcp_marker.unlink(missing_ok=True)
    agent = load(tmp_path, {"demo": sdk_sse}, tools="mcp__demo__slow = true\n", timeout=1500)
    try:
        result = agent.call("mcp__demo__slow", seconds=30)
        assert not result.success
        assert "timed out after 1500 ms" in result["error"]
        # spec: "A timeout does not prove that the remote operation had no effect" -- and the error says so
        assert "may still have taken effect" in result["error"]
        assert result["hint"].startswith("A timeout does not prove the call had no effect")
        _wait_for(mcp_marker)
        assert agent.call("mcp__demo__slow", seconds=0).success  # the connection is still usable
    finally:
        agent.close()


def test_cancelling_a_call_propagates_and_cancels_on_the_wire(tmp_path, sdk_sse, mcp_marker):
    mcp_marker.unlink(missing_ok=True)
    agent = load(tmp_path, {"demo": sdk_sse}, tools="mcp__demo__slow = true\n")

    async def interrupt() -> None:
        task = asyncio.ensure_future(agent.acall("mcp__demo__slow", seconds=30))
        await asyncio.sleep(0.5)
        task.cancel()
        await task

    try:
        with pytest.raises(asyncio.CancelledError):
            asyncio.run(interrupt())
        _wait_for(mcp_marker)
    finally:
        agent.close()


def _wait_for(marker: Path) -> None:
    for _ in range(100):
        if marker.exists():
            assert marker.read_text() == "cancelled"
            return
        time.sleep(0.05)
    pytest.fail("the server never saw the cancellation")


def test_colliding_local_names_fail_load(tmp_path):
    with sdk_server("--collide") as url:
        message = load_error(tmp_path, {"demo": url})
    assert message == "config/mcp.toml:1: server 'demo': tools 'a.b' and 'a/b' would both be named 'mcp__demo__a_b'"


# -- the rogue server -------------------------------------------------------------------------------
def test_a_redirect_is_refused_and_names_the_location(tmp_path, rogue):
    message = load_error(tmp_path, {"moved": rogue.url("/redirect")})
    assert message.startswith("config/mcp.toml:1: server 'moved': cannot initialize or list tools")
    assert "HTTP 307 redirect to http://127.0.0.1:9/elsewhere/mcp" in message
    assert not [r for r in rogue.received if r["path"] == "/elsewhere/mcp"]


def test_a_server_failing_initialize_stops_load_with_its_reason(tmp_path, rogue):
    message = load_error(tmp_path, {"broken": rogue.url("/fail-init")})
    assert message.startswith("config/mcp.toml:1: server 'broken': cannot initialize or list tools")
    assert "HTTP 500" in message and "database offline" in message


def test_keepalives_cannot_extend_the_discovery_deadline(tmp_path, rogue):
    message = load_error(tmp_path, {"chatty": rogue.url("/keepalive")}, timeout=700)
    assert "timed out after 700 ms connecting and listing tools" in message


def test_endless_pagination_stops_at_the_page_cap(tmp_path, rogue):
    assert "tools/list still had more pages after 100" in load_error(tmp_path, {"pages": rogue.url("/pages")})


def test_an_unsupported_protocol_version_is_refused(tmp_path, rogue):
    assert "server chose protocol version '2024-11-05'" in load_error(tmp_path, {"old": rogue.url("/version")})


def test_names_over_64_characters_fail_load(tmp_path, rogue):
    name = "s" * 55
    message = load_error(tmp_path, {name: rogue.url("/quirky")})
    assert f"tool 'echo' would be named 'mcp__{name}__echo', over 64 characters" in message


def test_framing_pings_and_headers_of_a_quirky_server(tmp_path, rogue):
    before = len(rogue.received)
    agent = load(tmp_path, {"q": rogue.url("/quirky")}, tools="mcp__q__echo = true\n", headers={"Authorization": "k1"})
    try:
        assert "Quirky instructions." in agent.tool("mcp__q__echo").description
        result = agent.call("mcp__q__echo", x=[1, "two"])
        assert result["content"] == [{"type": "text", "text": json.dumps({"x": [1, "two"]})}]
    finally:
        agent.close()
    probe, *seen = rogue.received[before:]
    assert probe["method"] == "server/discover"  # answered 404 -32601: a legacy server, so the handshake follows
    assert [r["method"] for r in seen] == [
        "initialize",
        "response",  # our answer to the ping the server sends before each response
        "notifications/initialized",
        "tools/list",
        "response",
        "tools/call",
        "response",
        "DELETE",  # close() ends the session
    ]
    assert all(r["headers"].get("Authorization") == "k1" for r in seen)  # mcp.toml headers on every request
    assert "MCP-Protocol-Version" not in seen[0]["headers"] and "Mcp-Session-Id" not in seen[0]["headers"]
    # the version is known once initialize has answered; the session id as soon as its headers arrive
    assert all(r["headers"].get("MCP-Protocol-Version") == "2025-11-25" for r in seen[2:])
    assert all(r["headers"].get("Mcp-Session-Id") == "quirk" for r in seen[1:])
    assert seen[1]["body"] == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}


def test_an_expired_session_is_renewed_once(tmp_path, rogue):
    agent = load(tmp_path, {"x": rogue.url("/expire")}, tools="mcp__x__echo = true\n")
    try:
        result = agent.call("mcp__x__echo")
        assert result["content"][0]["text"] == "s2"  # answered in the new session
        assert rogue.methods("/expire").count("initialize") == 2
    finally:
        agent.close()


def test_dry_run_discovers_but_never_calls(tmp_path, rogue):
    before = len(rogue.received)
    report = cireil.dry_run(agent_with(tmp_path, {"q": rogue.url("/quirky")}, tools="mcp__q__echo = true\n"))
    assert report.ok, report.errors
    assert [t.name for t in report.tools] == ["mcp__q__echo"]
    methods = [r["method"] for r in rogue.received[before:]]
    assert "tools/list" in methods and "tools/call" not in methods
    assert methods[-1] == "DELETE"  # and it does not leave its session behind


def test_definitions_stay_fixed_until_restart(tmp_path, rogue, sdk_sse):
    agent = load(tmp_path, {"q": rogue.url("/quirky")}, tools="mcp__q__echo = true\n")
    try:
        (agent.directory / "config" / "mcp.toml").write_text(mcp_toml({"demo": sdk_sse}))
        (agent.directory / "config" / "tools.toml").write_text("mcp__q__echo = true\n")
        result = agent.call("mcp__q__echo")
        assert result.success
        assert any("mcp.toml changed" in n for n in result.notices)
        deletes = rogue.methods("/quirky").count("DELETE")
        with pytest.raises(ConfigError, match="unknown tool 'mcp__q__echo'"):
            agent.restart()  # re-discovers: server q is gone
        assert agent.call("mcp__q__echo").success  # a failed restart keeps what was loaded
        (agent.directory / "config" / "tools.toml").write_text("mcp__demo__add = true\n")
        agent.restart()
        assert rogue.methods("/quirky").count("DELETE") == deletes + 1  # the old connection was closed
        assert agent.call("mcp__demo__add", a=1, b=1)["content"][0]["text"] == "2"
    finally:
        agent.close()
