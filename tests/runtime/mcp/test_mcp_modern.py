"""The 2026-07-28 revision and the choice of era at connect, seen on the wire of real loopback servers:
the dual-era SDK server (it comes up modern), legacy-only peers that refuse the probe in every way seen
in the field (the client falls back to the handshake), and a modern-only peer with header-routed tools."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest

import cireil
from cireil.runtime.config.mcp_config import McpServer
from cireil.runtime.mcp.client import McpClient
from cireil.runtime.mcp.errors import McpError
from cireil.runtime.mcp.headers import param_marks
from conftest import make_agent
from mcp_peers.launch import mcp_toml
from mcp_peers.recorder import read
from mcpkit import load, load_error

pytest_plugins = ("mcp_peers.fixtures",)  # the SDK and rogue servers

MODERN = "2026-07-28"
META = "io.modelcontextprotocol/protocolVersion"
TOOLS = "mcp__demo__add = true\nmcp__demo__ns_dotted-name = true\n"


def wire(record: Path, since: int) -> list[dict]:
    return read(str(record))[since:]


# -- the SDK 2.3.0 server: dual-era, so the probe finds it modern ----------------------------------
def test_the_sdk_server_is_spoken_to_in_2026_07_28(tmp_path, sdk_recorded):
    url, record = sdk_recorded
    since = len(read(str(record)))
    agent = load(tmp_path, {"demo": url}, tools=TOOLS)
    try:
        add = agent.tool("mcp__demo__add")
        assert add.origin == f"mcp:demo {MODERN}"
        assert "Demo server: use add for sums." in add.description  # instructions from server/discover
        assert agent.call("mcp__demo__add", a=2, b=40)["content"] == [{"type": "text", "text": "42"}]
        assert agent.call("mcp__demo__ns_dotted-name")["content"][0]["text"] == "dot"
    finally:
        agent.close()
    seen = wire(record, since)
    assert [r["body"]["method"] for r in seen] == ["server/discover", "tools/list", "tools/call", "tools/call"]
    probe = seen[0]["body"]["params"]["_meta"]
    assert probe[META] == MODERN
    assert probe["io.modelcontextprotocol/clientCapabilities"] == {}
    assert probe["io.modelcontextprotocol/clientInfo"]["name"] == "cireil"
    for request in seen:  # no session, no handshake, no DELETE; every request routable by its headers
        assert request["method"] == "POST"
        assert request["body"]["params"]["_meta"][META] == MODERN
        assert request["headers"]["mcp-protocol-version"] == MODERN
        assert request["headers"]["mcp-method"] == request["body"]["method"]
        assert "mcp-session-id" not in request["headers"]
    calls = [r for r in seen if r["body"]["method"] == "tools/call"]
    assert [r["headers"]["mcp-name"] for r in calls] == ["add", "ns.dotted-name"]  # the remote names
    assert [r["body"]["params"]["name"] for r in calls] == ["add", "ns.dotted-name"]
    assert "mcp-name" not in seen[1]["headers"]  # only name-bearing methods carry it


def test_a_modern_call_past_its_timeout_is_cancelled_by_closing_its_stream(tmp_path, sdk_recorded):
    url, record = sdk_recorded
    agent = load(tmp_path, {"demo": url}, tools="mcp__demo__slow = true\n", timeout=1500)
    try:
        since = len(read(str(record)))
        result = agent.call("mcp__demo__slow", seconds=30)
        assert "timed out after 1500 ms" in result["error"]
        assert agent.call("mcp__demo__slow", seconds=0).success  # the client still works after the cancel
    finally:
        agent.close()
    # 2026-07-28 has no cancel notification over HTTP: only the two calls reached the server
    assert [r["body"]["method"] for r in wire(record, since)] == ["tools/call", "tools/call"]


def test_the_legacy_handshake_still_works_against_the_sdk_server(sdk_recorded, mcp_marker):
    """The path legacy servers get, forced on the dual-era server: handshake, session, cancel, DELETE."""
    url, record = sdk_recorded
    since = len(read(str(record)))

    async def session() -> None:
        client = McpClient(McpServer("demo", url, timeout=1500), probe=False)
        try:
            assert {t["name"] for t in await client.connect()} >= {"add", "slow"}
            assert client.revision == "2025-11-25"
            assert client.instructions == "Demo server: use add for sums."
            assert (await client.call_tool("add", {"a": 1, "b": 2}))["content"][0]["text"] == "3"
            with pytest.raises(McpError, match="timed out after 1500 ms"):
                await client.call_tool("slow", {"seconds": 30})
        finally:
            await client.close()

    asyncio.run(session())
    seen = wire(record, since)
    methods = [r["body"]["method"] if r["body"] else r["method"] for r in seen]
    handshake, cancel = ["initialize", "notifications/initialized"], ["notifications/cancelled", "DELETE"]
    assert methods == [*handshake, "tools/list", "tools/call", "tools/call", *cancel]
    assert "mcp-protocol-version" not in seen[0]["headers"] and "_meta" not in seen[0]["body"]["params"]
    session_ids = {r["headers"].get("mcp-session-id") for r in seen[1:]}
    assert len(session_ids) == 1 and None not in session_ids  # the session taken from initialize, on all
    assert all(r["headers"].get("mcp-protocol-version") == "2025-11-25" for r in seen[1:])
    assert not any("mcp-method" in r["headers"] for r in seen)
    assert seen[5]["body"]["params"]["requestId"] == seen[4]["body"]["id"]


# -- legacy-only peers: every way of refusing the probe that means "use the handshake" --------------
@pytest.mark.parametrize(
    "how", ["not-found", "rpc-not-found", "missing-session", "405", "legacy-versions", "discover-legacy"]
)
def test_a_legacy_server_gets_the_handshake_after_the_probe(tmp_path, rogue, how):
    path = f"/plain/{how}"
    before = len(rogue.received)
    agent = load(tmp_path, {"old": rogue.url(path)}, tools="mcp__old__echo = true\n")
    try:
        assert agent.tool("mcp__old__echo").origin == "mcp:old 2025-11-25"
        assert agent.call("mcp__old__echo", x=1)["content"][0]["text"] == "plain"
    finally:
        agent.close()
    seen = [r for r in rogue.received[before:] if r["path"] == path]
    assert [r["method"] for r in seen] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "DELETE",
    ]
    probe = seen[0]
    assert probe["headers"]["MCP-Protocol-Version"] == MODERN and probe["headers"]["Mcp-Method"] == "server/discover"
    assert probe["body"]["params"]["_meta"][META] == MODERN
    handshake = seen[1]
    assert "MCP-Protocol-Version" not in handshake["headers"] and "Mcp-Session-Id" not in handshake["headers"]
    assert handshake["body"]["params"]["protocolVersion"] == "2025-11-25"
    for request in seen[2:]:  # the session id from initialize only (never the one minted on the probe's 400)
        assert request["headers"]["Mcp-Session-Id"] == "plain"
        assert request["headers"]["MCP-Protocol-Version"] == "2025-11-25"
        assert "Mcp-Method" not in request["headers"] and "Mcp-Name" not in request["headers"]
        assert request["body"] is None or "_meta" not in (request["body"].get("params") or {})


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("future-only", "server speaks protocol versions 2027-01-01; this client speaks 2026-07-28, 2025-11-25"),
        ("header-mismatch", "HTTP 400 from {url}: mcp-method header does not match the body"),
        ("server-error", "HTTP 500 from {url}: probe exploded"),
    ],
)
def test_a_probe_answer_that_is_not_legacy_fails_the_connect(tmp_path, rogue, how, expected):
    url = rogue.url(f"/plain/{how}")
    message = load_error(tmp_path, {"odd": url})
    assert message.startswith("config/mcp.toml:1: server 'odd': cannot initialize or list tools")
    assert expected.format(url=url) in message
    assert set(rogue.methods(f"/plain/{how}")) == {"server/discover"}  # no handshake was tried


def test_a_redirect_on_the_probe_is_refused_with_its_location(tmp_path, rogue):
    message = load_error(tmp_path, {"moved": rogue.url("/redirect")})
    assert "HTTP 307 redirect to http://127.0.0.1:9/elsewhere/mcp" in message
    assert set(rogue.methods("/redirect")) == {"server/discover"}  # the redirect was not followed, nor initialize


def test_the_probe_shares_the_connect_deadline(tmp_path, rogue):
    message = load_error(tmp_path, {"slow": rogue.url("/plain/hang")}, timeout=700)
    assert "timed out after 700 ms connecting and listing tools" in message


# -- a modern-only peer: header-routed tools, odd names, input requests -----------------------------
MODERN_TOOLS = "mcp__m__echo = true\nmcp__m__h_llo_w_rld = true\nmcp__m__routed = true\nmcp__m__ask = true\n"


def test_arguments_marked_x_mcp_header_are_mirrored_in_headers(tmp_path, rogue):
    before = len(rogue.received)
    agent = load(tmp_path, {"m": rogue.url("/modern")}, tools=MODERN_TOOLS)
    try:
        assert "Modern notes." in agent.tool("mcp__m__echo").description
        routed = agent.call("mcp__m__routed", region="eu-west", opts={"dry": True}, note="not mirrored")
        assert json.loads(routed["content"][0]["text"]) == {
            "Mcp-Name": "routed",
            "Mcp-Param-Dry": "true",
            "Mcp-Param-Region": "eu-west",
        }
        # a value that is not plain printable ASCII travels base64-wrapped; an absent argument sends no header
        headers = json.loads(agent.call("mcp__m__routed", region=" Zürich")["content"][0]["text"])
        assert headers["Mcp-Param-Region"] == "=?base64?" + base64.b64encode(" Zürich".encode()).decode() + "?="
        assert "Mcp-Param-Dry" not in headers
        name = json.loads(agent.call("mcp__m__h_llo_w_rld")["content"][0]["text"])["Mcp-Name"]
        assert base64.b64decode(name.removeprefix("=?base64?").removesuffix("?=")).decode() == "héllo wörld"
        asked = agent.call("mcp__m__ask")
        assert not asked.success and "asked for client input" in asked["error"]
    finally:
        agent.close()
    seen = [r for r in rogue.received[before:] if r["path"] == "/modern"]
    assert [r["method"] for r in seen] == ["server/discover", "tools/list"] + ["tools/call"] * 4  # no handshake
    assert all(r["headers"].get("Cookie") == "lb=replica-2" for r in seen[1:])  # a cookie set is sent back


def test_a_tool_with_an_invalid_header_mark_is_not_offered(tmp_path, rogue):
    message = load_error(tmp_path, {"m": rogue.url("/modern")}, tools="mcp__m__bad-mark = true\n")
    assert "unknown tool 'mcp__m__bad-mark': server 'm' does not advertise it" in message


def test_dry_run_of_a_modern_server_leaves_nothing_to_close(tmp_path, rogue):
    before = len(rogue.received)
    agent = make_agent(tmp_path, "mcp__m__echo = true\n")
    (agent / "config" / "mcp.toml").write_text(mcp_toml({"m": rogue.url("/modern")}))
    report = cireil.dry_run(agent)
    assert report.ok, report.errors
    assert [r["method"] for r in rogue.received[before:]] == ["server/discover", "tools/list"]


# -- the HTTP path ----------------------------------------------------------------------------------
def test_proxy_settings_in_the_environment_are_honoured(monkeypatch, rogue):
    """Calls skip httpx's client layers only when there is no proxy to choose; with one, it still routes."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", rogue.url(""))
    target = "http://127.0.0.1:9/via-proxy/mcp"  # nothing listens there: only the proxy can answer

    async def connect() -> None:
        client = McpClient(McpServer("p", target, timeout=5000))
        try:
            with pytest.raises(McpError, match="HTTP 404"):
                await client.connect()
        finally:
            await client.close()

    asyncio.run(connect())
    proxied = [r["method"] for r in rogue.received if r["path"] == target]
    assert proxied == ["server/discover", "initialize"]  # both went through the proxy, absolute URL and all


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}, "needs type string, integer or boolean"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}, "is not a valid header name"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": 7}}}, "is not a valid header name"),
        (
            {
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "R"},
                    "b": {"type": "string", "x-mcp-header": "r"},
                }
            },
            "is used twice",
        ),
        ({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}, "not on a property reached"),
        ({"type": "object", "x-mcp-header": "Root"}, "not on a property reached"),
    ],
)
def test_invalid_header_marks_are_named(schema, reason):
    with pytest.raises(ValueError, match=reason):
        param_marks(schema)


def test_marks_in_instance_data_are_not_marks():
    schema = {"properties": {"a": {"type": "object", "default": {"x-mcp-header": "No"}, "enum": [{"x-mcp-header": 1}]}}}
    assert param_marks(schema) == {}
