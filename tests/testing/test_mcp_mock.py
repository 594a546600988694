"""McpMock: a cassette served as a Streamable HTTP MCP server, spoken to by the official `mcp` SDK client in both
eras, by cireil's own MCP client (an agent whose mcp.toml points at it), and by hand-made bad requests."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket

import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import cireil
from cireil.runtime.config.mcp_config import McpServer
from cireil.runtime.mcp.client import McpClient
from cireil.testing.mcp_cassette import FORMAT, Cassette
from cireil.testing.mcp_mock import MAX_BODY, UNRECORDED, McpMock
from mcpkit import load

WEATHER = {
    "name": "weather",
    "description": "Structured content: a dict result.",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "outputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "temperature": {"type": "integer"}}},
}
ADD = {"name": "add", "description": "Add two numbers.", "inputSchema": {"type": "object"}}
FAIL = {"name": "fail", "description": "Always raises.", "inputSchema": {"type": "object"}}


def result(text: str, structured: dict | None = None, is_error: bool = False) -> dict:
    out: dict = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        out["structuredContent"] = structured
    return out


def recorded() -> dict:
    calls = [
        {"tool": "weather", "arguments": {"city": "Oslo"}, "result": result("{}", {"city": "Oslo", "temperature": 3})},
        {"tool": "add", "arguments": {"a": 1, "b": 2}, "result": result("3")},
        {"tool": "add", "arguments": {"b": 2, "a": 1}, "result": result("3 (second)")},
        {"tool": "fail", "arguments": {"msg": "boom"}, "result": result("Error executing tool fail: boom", None, True)},
        {"tool": "add", "arguments": {"a": "x", "b": 1}, "error": {"code": -32602, "message": "a is not a number"}},
    ]
    demo = {
        "revision": "2025-06-18",
        "serverInfo": {"name": "demo", "version": "0.1"},
        "instructions": "Demo server: use add for sums.",
        "tools": [WEATHER, ADD, FAIL],
        "calls": calls,
    }
    other = {"revision": "2026-07-28", "serverInfo": None, "instructions": None, "tools": [ADD], "calls": []}
    return {"format": FORMAT, "servers": {"demo": demo, "other tools": other}}


async def sdk_session_run(url: str, modern: bool) -> dict:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        if modern:
            await session.discover()
        else:
            await session.initialize()
        out: dict = {
            "version": session.protocol_version,
            "info": session.server_info.name if session.server_info else None,
            "instructions": session.instructions,
        }
        listed = await session.list_tools()
        out["tools"] = [t.name for t in listed.tools]
        weather = await session.call_tool("weather", {"city": "Oslo"})
        out["weather"] = (weather.structured_content, weather.is_error)
        out["adds"] = [(await session.call_tool("add", {"a": 1, "b": 2})).content[0].text for _ in range(2)]
        failed = await session.call_tool("fail", {"msg": "boom"})
        out["fail"] = (failed.is_error, failed.content[0].text)
        errors = []
        for arguments in ({"a": "x", "b": 1}, {"a": 1, "b": 2}, {"a": 1, "b": 5}):
            with pytest.raises(MCPError) as info:
                await session.call_tool("add", arguments)
            errors.append((info.value.error.code, info.value.error.message))
        out["errors"] = errors
        await session.send_ping()
        return out


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
def test_the_official_sdk_client_lists_and_calls_the_recorded_tools(modern):
    with McpMock(recorded()) as mock:
        got = asyncio.run(sdk_session_run(mock.url("demo"), modern))
        asked = [(c["tool"], c["arguments"], c["answered"]) for c in mock.calls]
        sessions_left = dict(mock.sessions)
    assert got["version"] == ("2026-07-28" if modern else "2025-11-25")  # the handshake: the revision asked for
    assert got["info"] == "demo" and got["instructions"] == "Demo server: use add for sums."
    assert got["tools"] == ["weather", "add", "fail"]
    assert got["weather"] == ({"city": "Oslo", "temperature": 3}, False)
    assert got["adds"] == ["3", "3 (second)"]  # identical calls: in recorded order
    assert got["fail"] == (True, "Error executing tool fail: boom")
    recorded_error, used_up, unrecorded = got["errors"]
    assert recorded_error == (-32602, "a is not a number")
    assert used_up[0] == UNRECORDED and "all 2 recorded calls with these arguments were already answered" in used_up[1]
    assert unrecorded == (
        UNRECORDED,
        "no recorded answer for MCP server 'demo' tool 'add' with arguments {\"a\": 1, \"b\": 5}: "
        'nearest recorded arguments: {"a": 1, "b": 2}; {"a": "x", "b": 1}',
    )
    assert [a for _, a, answered in asked if not answered] == [{"a": 1, "b": 2}, {"a": 1, "b": 5}]
    assert sessions_left == {}  # the SDK ends its session with DELETE (and 2026-07-28 has none)


def test_cireil_agent_lists_and_calls_the_recorded_tools(tmp_path):
    tools = "mcp__demo__add = true\nmcp__demo__weather = true\nmcp__demo__fail = true\n"
    with McpMock(recorded()) as mock:
        agent = load(tmp_path, {"demo": mock.url("demo")}, tools=tools)
        try:
            add = agent.tool("mcp__demo__add")
            assert add.origin == "mcp:demo 2026-07-28"  # the mock answers the probe: modern
            assert "Demo server: use add for sums." in add.description
            assert agent.call("mcp__demo__weather", city="Oslo")["structuredContent"]["temperature"] == 3
            assert agent.call("mcp__demo__add", a=1, b=2)["content"][0]["text"] == "3"
            assert agent.call("mcp__demo__add", b=2, a=1)["content"][0]["text"] == "3 (second)"
            unrecorded = agent.call("mcp__demo__add", a=1, b=5)
            assert not unrecorded.success
            assert unrecorded.data["error"].endswith('nearest recorded arguments: {"a": 1, "b": 2}; {"a": "x", "b": 1}')
        finally:
            agent.close()


def test_cireil_client_over_the_handshake():
    async def run(url: str) -> tuple:
        client = McpClient(McpServer("demo", url), probe=False)
        try:
            listed = await client.connect()
            answer = await client.call("add", {"a": 1, "b": 2})
            return client.revision, [t["name"] for t in listed], answer, client.transport.session_id
        finally:
            await client.close()

    with McpMock(recorded()) as mock:
        revision, names, answer, sid = asyncio.run(run(mock.url("demo")))
        assert sid is not None and mock.sessions == {}  # closed with DELETE
    assert revision == "2025-11-25" and names == ["weather", "add", "fail"]
    assert answer["content"][0]["text"] == "3"


def test_one_port_serves_every_server_at_its_own_path():
    with McpMock(recorded()) as mock:
        assert set(mock.urls) == {"demo", "other tools"}
        assert mock.url("other tools").endswith("/mcp/other%20tools")
        status, body, _ = post(mock, "/mcp/other%20tools", rpc("initialize", {"protocolVersion": "2025-03-26"}))
        assert status == 200 and body["result"]["protocolVersion"] == "2025-03-26"
        assert body["result"]["serverInfo"]["name"] == "other tools"  # none recorded: named after the server
        with pytest.raises(KeyError, match="recorded: 'demo', 'other tools'"):
            mock.url("nope")


def rpc(method: str, params: dict | None = None, rid: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params is not None else {})}


def post(mock: McpMock, path: str, body: dict | bytes, headers: dict | None = None, verb: str = "POST") -> tuple:
    conn = http.client.HTTPConnection("127.0.0.1", mock.port, timeout=10)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
        conn.request(verb, path, data, sent)
        response = conn.getresponse()
        raw = response.read()
        kind = response.getheader("content-type", "")
        parsed = json.loads(raw) if kind.startswith("application/json") and raw else raw.decode()
        return response.status, parsed, dict(response.getheaders())
    finally:
        conn.close()


def test_the_http_surface_and_bad_requests():
    modern = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "add"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    with McpMock(recorded()) as mock:
        path = "/mcp/demo"
        assert post(mock, path, b"", verb="GET")[0] == 405
        assert post(mock, "/elsewhere", rpc("ping"))[0] == 404
        assert post(mock, path, b"{not json")[1]["error"]["code"] == -32700
        assert post(mock, path, b"[" * 100_000 + b"]" * 100_000)[1]["error"]["code"] in (-32700, -32600)
        assert post(mock, path, [rpc("ping")])[1]["error"]["message"].startswith("JSON-RPC batches")
        assert post(mock, path, {"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202
        status, body, _ = post(mock, path, rpc("resources/list"))
        assert body["error"]["code"] == -32601
        status, body, _ = post(mock, path, rpc("tools/call", {"arguments": {}}))
        assert body["error"]["code"] == -32602
        # a session this server never gave out: 404, as after a restart
        assert post(mock, path, rpc("tools/list"), {"Mcp-Session-Id": "gone"})[0] == 404
        status, body, headers = post(mock, path, rpc("initialize", {"protocolVersion": "1999-01-01"}))
        assert body["result"]["protocolVersion"] == "2025-06-18"  # unknown: the recorded revision
        sid = headers["Mcp-Session-Id"]
        assert post(mock, path, rpc("tools/list"), {"Mcp-Session-Id": sid})[1]["result"]["tools"][0] == WEATHER
        assert post(mock, path, b"", {"Mcp-Session-Id": sid}, verb="DELETE")[0] == 200
        assert post(mock, path, rpc("tools/list"), {"Mcp-Session-Id": sid})[0] == 404
        # 2026-07-28: the headers must agree with the body, the version must be spoken
        call = rpc("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta})
        assert post(mock, path, call, {**modern, "Mcp-Name": "fail"})[1]["error"]["code"] == -32020
        assert post(mock, path, call, {**modern, "Mcp-Method": "tools/list"})[1]["error"]["code"] == -32020
        future = {**call, "params": {**call["params"], "_meta": {"io.modelcontextprotocol/protocolVersion": "2030"}}}
        status, body, _ = post(mock, path, future, modern)
        assert status == 400 and body["error"]["data"]["supported"] == ["2026-07-28"]
        status, body, _ = post(mock, path, call, modern)
        assert body["result"]["resultType"] == "complete" and body["result"]["content"][0]["text"] == "3"
        # a client that accepts only an event stream gets one
        status, text, headers = post(mock, path, rpc("ping"), {"Accept": "text/event-stream"})
        assert headers["Content-Type"] == "text/event-stream" and text.startswith("event: message\ndata: {")
        # too big: refused before the body is read, and the connection closed
        with socket.create_connection(("127.0.0.1", mock.port), timeout=10) as conn:
            conn.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n".encode())
            answer = conn.makefile("rb").read()
        assert answer.startswith(b"HTTP/1.1 413") and b"over 4194304 bytes" in answer
        # still serving after all that
        assert post(mock, path, rpc("ping"))[1]["result"] == {}


def test_a_cassette_with_an_unanswered_call_says_why():
    data = recorded()
    data["servers"]["demo"]["calls"].append({"tool": "add", "arguments": {"a": 9}, "notRecorded": "over 32 MiB"})
    with McpMock(Cassette(data)) as mock:
        body = post(mock, "/mcp/demo", rpc("tools/call", {"name": "add", "arguments": {"a": 9}}))[1]
    assert body["error"]["code"] == UNRECORDED and "has no answer: over 32 MiB" in body["error"]["message"]


def test_cireil_mcp_mock_yields_the_url_or_every_url(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps(recorded()))
    with cireil.mcp_mock(tmp_path / "c.json", server="demo") as url:
        assert url.endswith("/mcp/demo")
        assert asyncio.run(sdk_session_run(url, modern=True))["adds"] == ["3", "3 (second)"]
    with cireil.mcp_mock(recorded()) as urls:
        assert set(urls) == {"demo", "other tools"}
    with pytest.raises(ValueError, match="no MCP server 'x'"), cireil.mcp_mock(recorded(), server="x"):
        pass


def test_odd_requests_get_an_answer_never_a_dropped_connection():
    deep: dict = {}
    node = deep
    for _ in range(150):
        node["x"] = {}
        node = node["x"]
    odd = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1, 2]},
        {"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1, "method": 7},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        "just a string",
        rpc("tools/call", {"name": "add", "arguments": [1, 2]}),
        rpc("tools/call", {"name": ["add"], "arguments": {}}),
        rpc("tools/call", {"name": "add", "arguments": deep}),
        rpc("tools/call", {"name": "add", "arguments": {"a": "\ud800"}}),
        rpc("server/discover", {"_meta": "nope"}),
        rpc("tools/call", {"name": "add", "_meta": {"io.modelcontextprotocol/protocolVersion": None}}),
    ]
    with McpMock(recorded()) as mock:
        for body in odd:
            status, answer, _ = post(mock, "/mcp/demo", body)
            assert status in (200, 400, 404) and "error" in answer, (body, answer)
        name = "=?base64?!!!?="  # a malformed wrapped Mcp-Name matches nothing
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
        status, answer, _ = post(mock, "/mcp/demo", rpc("tools/call", {"name": "add", "_meta": meta}), headers)
        assert answer["error"]["code"] == -32020
        assert post(mock, "/mcp/demo", rpc("ping"))[1]["result"] == {}
