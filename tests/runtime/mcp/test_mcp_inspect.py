"""Looking at MCP servers as the Inspector would, on real loopback peers (the SDK server and the rogue one):
the wire log, output-schema checks, the server panel and reconnect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cireil
from cireil.render import result_bundle
from cireil.runtime.config.mcp_config import McpServer
from cireil.runtime.mcp.client import McpClient
from cireil.runtime.mcp.wirelog import WireLog
from conftest import make_agent
from mcp_peers.launch import mcp_toml

pytest_plugins = ("mcp_peers.fixtures",)  # the SDK and rogue servers

SECRET = "Bearer topsecret-123"
ROGUE_TOOLS = "mcp__odd__forecast = true\nmcp__odd__matches = true\nmcp__odd__sloppy = true\nmcp__odd__huge = true\n"


def load(tmp_path: Path, servers: dict[str, str], tools: str, **kw) -> cireil.Agent:
    agent_dir = make_agent(tmp_path, tools)
    (agent_dir / "config" / "mcp.toml").write_text(mcp_toml(servers, **kw))
    return cireil.load(agent_dir)


@pytest.fixture
def fresh_expire(rogue):
    """/expire forgets the first session it hands out (s1); the rogue server is shared by the whole run, so its
    count starts afresh here and is left afresh for the next test that relies on it."""
    rogue.sessions = 0
    yield
    rogue.sessions = 0
    rogue.received[:] = [r for r in rogue.received if r["path"] != "/expire"]  # counted by test_mcp_agent


# -- the wire log ---------------------------------------------------------------------------------
def test_each_call_shows_its_own_exchange_with_secrets_masked(tmp_path, sdk_sse):
    agent = load(
        tmp_path,
        {"demo": sdk_sse},
        "mcp__demo__add = true\nmcp__demo__slow = true\n",
        headers={"Authorization": SECRET, "X-Tenant": "acme-secret"},
    )
    try:
        result = agent.call("mcp__demo__add", a=2, b=3)
        exchanges = [e.as_dict() for e in result.inspect["mcp"]["exchanges"]]
        assert [e["method"] for e in exchanges] == ["tools/call"]  # this call's exchange only
        call = exchanges[0]
        params = call["request"]["body"]["params"]
        assert params["name"] == "add" and params["arguments"] == {"a": 2, "b": 3}
        assert call["response"]["status"] == 200
        assert call["response"]["messages"][-1]["result"]["structuredContent"] == {"result": 5}
        assert call["revision"] == agent.mcp_clients()["demo"].revision
        timings = call["timings_ms"]
        assert 0 < timings["first_byte"] <= timings["total"]
        headers = call["request"]["headers"]
        assert headers["authorization"].startswith("Bearer ••••") and headers["x-tenant"].startswith("••••")
        html = result_bundle(result)["text/html"]
        assert "wire · 1 exchange" in html and "tools/call" in html
        # the whole log, oldest first: discovery, then the calls
        agent.call("mcp__demo__add", a=1, b=1)
        log = agent.mcp_log("demo")
        methods = [e["method"] for e in log]
        assert methods[0] == "server/discover" and methods[-2:] == ["tools/call", "tools/call"]
        assert log[0]["timings_ms"]["connect"] is not None  # the first request opened the connection
        exported = tmp_path / "wire.jsonl"
        assert agent.export_mcp_log(exported) == len(log)
        text = exported.read_text()
        assert [json.loads(line)["seq"] for line in text.splitlines()] == [e["seq"] for e in log]
        for shown in (text, html, json.dumps(log)):
            assert "topsecret" not in shown and "acme-secret" not in shown
    finally:
        agent.close()


def test_an_sse_answer_keeps_every_event_and_the_ping_answer_is_logged(tmp_path, rogue):
    agent = load(tmp_path, {"q": rogue.url("/quirky")}, "mcp__q__echo = true\n")
    try:
        result = agent.call("mcp__q__echo", x="<script>")
        first, *rest = [e.as_dict() for e in result.inspect["mcp"]["exchanges"]]
        assert first["response"]["type"] == "sse"
        messages = first["response"]["messages"]
        assert messages[0] == {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
        assert messages[1]["method"] == "notifications/message" and messages[2] == "ignored"  # an "other" event
        assert messages[-1]["id"] == first["request"]["body"]["id"]
        assert [e["method"] for e in rest] == ["(answer to ping)"]  # our POST answering the server's ping
        html = result_bundle(result)["text/html"]
        assert "wire · 2 exchanges" in html and "<script>" not in html and "&lt;script&gt;" in html
    finally:
        agent.close()


def test_cookies_are_masked_and_every_message_is_escaped(tmp_path, rogue):
    agent = load(tmp_path, {"odd": rogue.url("/inspect")}, ROGUE_TOOLS)
    try:
        log = agent.mcp_log()
        init = next(e for e in log if e["method"] == "initialize")
        assert init["response"]["headers"]["set-cookie"].startswith("••••")
        assert "cookie-secret" not in json.dumps(log)
        result = agent.call("mcp__odd__matches")
        cookie_sent = result.inspect["mcp"]["exchanges"][0].as_dict()["request"]["headers"].get("cookie", "")
        assert cookie_sent.startswith("••••")
        html = result_bundle(result)["text/html"]
        assert "<b>me</b>" not in html and "cookie-secret" not in html
    finally:
        agent.close()


def test_the_ring_is_bounded_and_can_be_turned_off(sdk_sse):
    import asyncio

    async def run() -> tuple[WireLog, int]:
        client = McpClient(McpServer("demo", sdk_sse))
        client.wire.capacity = 5
        await client.connect()
        for i in range(8):
            await client.call_tool("add", {"a": i, "b": 0})
        kept = [e.method for e in client.wire]
        client.wire.capacity = 0
        await client.call_tool("add", {"a": 1, "b": 0})
        await client.close()
        assert kept == ["tools/call"] * 5
        return client.wire, len(kept)

    wire, _ = asyncio.run(run())
    assert len(wire) == 0 and wire.entries() == []


def test_a_transport_failure_still_shows_what_went_over_the_wire(tmp_path, rogue, fresh_expire):
    agent = load(tmp_path, {"exp": rogue.url("/expire")}, "mcp__exp__echo = true\n")
    try:
        result = agent.call("mcp__exp__echo", x=1)  # the 404 of an expired session, a new handshake, the retry
        methods = [e.method for e in result.inspect["mcp"]["exchanges"]]
        assert methods == ["tools/call", "initialize", "notifications/initialized", "tools/call"]
        statuses = [e.status for e in result.inspect["mcp"]["exchanges"]]
        assert statuses[0] == 404 and statuses[-1] == 200
    finally:
        agent.close()


# -- output schemas -------------------------------------------------------------------------------
def test_structured_content_is_checked_against_the_output_schema(tmp_path, rogue, sdk_sse):
    agent = load(tmp_path, {"odd": rogue.url("/inspect"), "demo": sdk_sse}, ROGUE_TOOLS + "mcp__demo__add = true\n")
    try:
        broken = agent.call("mcp__odd__forecast", city="Oslo")
        assert broken.data == {"content": [{"type": "text", "text": "hot"}], "structuredContent": {"temp": "hot"}}
        assert broken.success  # the agent's result is as the server sent it
        out = result_bundle(broken)
        assert "does not match the tool's outputSchema (2 problems)" in out["text/plain"]
        assert "$.temp: 'hot' is not of type 'number'" in out["text/plain"]
        assert "$: 'city' is a required property" in out["text/plain"]
        assert "cireil-outputcheck" in out["text/html"] and "$.temp" in out["text/html"]
        good = result_bundle(agent.call("mcp__odd__matches"))
        assert "structuredContent matches" in good["text/plain"]
        sdk = result_bundle(agent.call("mcp__demo__add", a=1, b=2))  # the SDK server declares {result: int}
        assert "structuredContent matches" in sdk["text/plain"]
        assert "outputSchema" not in result_bundle(agent.call("mcp__odd__sloppy", mode=1))["text/plain"]
    finally:
        agent.close()


def test_output_check_edge_cases():
    from cireil.runtime.mcp.outputcheck import check

    schema = {"type": "object", "properties": {"n": {"type": "string", "pattern": "^(a+)+$"}}}
    assert check(schema, {"n": "a" * 5000 + "!"}) == []  # a long value is not fed to a server's regex
    assert [v.path for v in check(schema, {"n": "b"})] == ["$.n"]
    assert "no structuredContent" in check(schema, None, present=False)[0].message
    assert check(schema, None, present=False, is_error=True) == []
    assert "itself is invalid" in check({"type": 12}, {})[0].message
    assert "cannot check" in check({"$ref": "https://example.com/s.json"}, {})[0].message  # never fetched
    many = check({"type": "array", "items": {"type": "string"}}, list(range(100)))
    assert len(many) == 20 and many[0].path == "$[0]"
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    assert check({"type": "object", "additionalProperties": {"$ref": "#"}}, deep)[0].path == "$"
    assert check({"properties": {"a b": {"type": "string"}}}, {"a b": 1})[0].path == '$["a b"]'


# -- the server panel, reconnect, the magics ----------------------------------------------------------
def test_the_panel_shows_the_server_and_reconnect_renews_only_the_transport(tmp_path, rogue, fresh_expire):
    from cireil.kernel.views.mcp import ServerPanel

    agent = load(tmp_path, {"exp": rogue.url("/expire"), "odd": rogue.url("/inspect")}, "mcp__exp__echo = true\n")
    try:
        odd = agent.mcp_status("odd")[0]
        assert odd["revision"] == "2025-06-18" and odd["session"] == "session insp-1"
        assert odd["capabilities"] == {"tools": {"listChanged": False}, "logging": {}}
        assert odd["instructions"] == "Inspect <b>me</b>." and odd["tools"] == 4
        assert odd["server_info"] == {"name": "rogue-inspect", "version": "9"}
        panel = ServerPanel(agent, "odd")
        assert "Inspect &lt;b&gt;me&lt;/b&gt;." in panel.view.value and "<b>me</b>" not in panel.view.value
        assert "insp-1" in repr(panel) and "last errors: none" in repr(panel)

        lists_before = rogue.methods("/expire").count("tools/list")
        tool_before = agent.tool("mcp__exp__echo")
        session_before = agent.mcp_status("exp")[0]["session"]
        panel = ServerPanel(agent, "exp")
        panel.reconnect_button.click()
        assert "reconnected" in panel.status.value
        after = agent.mcp_status("exp")[0]
        assert after["session"] != session_before and after["session"].startswith("session s")
        assert rogue.methods("/expire").count("tools/list") == lists_before  # definitions were not fetched again
        assert agent.tool("mcp__exp__echo") is tool_before
        assert agent.call("mcp__exp__echo", x=1)["content"][0]["text"] == after["session"].split()[-1]
    finally:
        agent.close()


def test_failures_are_listed_in_the_panel_and_a_failed_reconnect_keeps_the_old_transport(tmp_path, rogue):
    agent = load(tmp_path, {"odd": rogue.url("/inspect")}, ROGUE_TOOLS)
    try:
        client = agent.mcp_clients()["odd"]
        old = client.transport
        client.server = McpServer("odd", rogue.url("/fail-init"), client.server.timeout)  # the server "breaks"
        from cireil.runtime.base.errors import CireilError

        try:
            agent.mcp_reconnect("odd")
        except CireilError as exc:
            assert "database offline" in str(exc)
        else:
            raise AssertionError("reconnect to a failing server succeeded")
        assert client.transport is old
        errors = agent.mcp_status("odd")[0]["errors"]
        assert len(errors) == 1 and "reconnecting" in errors[0]["error"] and "database offline" in errors[0]["error"]
    finally:
        agent.close()


def test_the_mcp_magics_in_a_kernel(tmp_path, kernel, sdk_sse):
    agent_dir = make_agent(tmp_path, "mcp__demo__add = true\n")
    (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"demo": sdk_sse}, headers={"Authorization": SECRET}))
    kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
    kernel.run("%cireil_mcp__demo__add a=1 b=2")
    log = kernel.run("%cireil mcp log demo --limit 1")
    assert "wire log of server 'demo': 1 exchanges" in log.text() and "tools/call" in log.text()
    html = log.bundles[-1]["text/html"]
    assert "tools/call" in html and "topsecret" not in html and "<script" not in html
    out = tmp_path / "log.jsonl"
    exported = kernel.run(f"%cireil mcp log --export {out}")
    assert "wrote 3 exchanges" in exported.stdout
    assert [json.loads(line)["method"] for line in out.read_text().splitlines()] == [
        "server/discover",
        "tools/list",
        "tools/call",
    ]
    panel = kernel.run("%cireil mcp")
    assert "MCP server 'demo'" in panel.text() and "2026-07-28" in panel.text()
    assert "application/vnd.jupyter.widget-view+json" in panel.bundles[-1]
    bad = kernel.run("%cireil mcp nosuch", ok=False)
    assert bad.stderr.startswith("UsageError: ") and "servers: demo" in bad.stderr
    assert kernel.run("%cireil mcp log --limit x", ok=False).stderr.startswith("UsageError: --limit")


def test_an_agent_turn_shows_the_wire_of_its_mcp_calls_and_the_model_never_sees_it(tmp_path, sdk_sse):
    from cireil.testing.scripted_llm import ScriptedLLM, reply
    from turnkit import turn_agent

    with ScriptedLLM() as llm:
        agent_dir = turn_agent(tmp_path, llm.base_url, tools="respond = true\nmcp__demo__add = true\n")
        (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"demo": sdk_sse}))
        agent = cireil.load(agent_dir)
        try:
            llm.script(
                reply.tool_calls(("mcp__demo__add", {"a": 20, "b": 22})),
                reply.tool_calls(("respond", {"content": "42"})),
            )
            events: list[dict] = []
            agent.turn("add them", on_event=events.append)
            (result,) = [e["result"] for e in events if e["type"] == "result" and e["call"]["name"] == "mcp__demo__add"]
            (exchange,) = result.inspect["mcp"]["exchanges"]
            assert exchange.as_dict()["request"]["body"]["params"]["arguments"] == {"a": 20, "b": 22}
            assert "wire · 1 exchange" in result_bundle(result)["text/html"]
            sent = json.dumps(llm.requests[1].body)
            assert "exchanges" not in sent and "timings_ms" not in sent and "42" in sent
        finally:
            agent.close()


def test_credentials_in_the_url_are_masked_wherever_it_is_shown(tmp_path, sdk_sse):
    from cireil.kernel.views.mcp import ServerPanel

    agent = load(tmp_path, {"demo": sdk_sse + "?api_key=hunter2&region=eu"}, "mcp__demo__add = true\n")
    try:
        result = agent.call("mcp__demo__add", a=1, b=2)
        assert result.success
        shown = [
            json.dumps(agent.mcp_log()),
            json.dumps(agent.mcp_status()),
            result_bundle(result)["text/html"],
            repr(ServerPanel(agent, "demo")),
        ]
        for text in shown:
            assert "hunter2" not in text
        assert agent.mcp_status()[0]["url"].endswith("?api_key=••••&region=eu")
    finally:
        agent.close()


def test_a_huge_message_is_cut_in_the_log_and_shown_as_text():
    from cireil.runtime.mcp.wirelog import BODY_LIMIT, MESSAGE_LIMIT

    log = WireLog("big", "http://127.0.0.1:1/mcp", {"X-Key": "k"})
    tap = log.begin("tools/list", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', {"X-Key": "k", "Accept": "*/*"})
    tap.answered(200, {"content-type": "text/event-stream"})
    huge = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t" * (BODY_LIMIT * 2)}]}})
    tap.message(huge, "sse")
    for _ in range(MESSAGE_LIMIT + 10):
        tap.message('{"jsonrpc":"2.0","method":"notifications/progress"}', "sse")
    tap.end("2025-11-25")
    (entry,) = log.entries()
    assert entry["truncated"] is True and len(entry["response"]["messages"]) == MESSAGE_LIMIT
    assert isinstance(entry["response"]["messages"][0], str) and len(entry["response"]["messages"][0]) == BODY_LIMIT
    assert entry["request"]["headers"] == {"X-Key": "•••• (1 chars)", "Accept": "*/*"}
    from cireil.render import wire

    html = wire.html(log.entries())
    assert "more characters in the log" in html and "(cut: the log keeps the first 64 KiB" in html


def test_connect_time_is_measured_also_when_proxy_settings_choose_the_route(sdk_sse, monkeypatch):
    import asyncio

    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # so the request still goes straight to the server

    async def run() -> list[dict]:
        client = McpClient(McpServer("demo", sdk_sse))
        assert not client.transport._timed_connects  # httpx's own transport: httpcore's trace hook times it
        await client.connect()
        await client.call_tool("add", {"a": 1, "b": 1})
        await client.close()
        return client.wire.entries()

    entries = asyncio.run(run())
    assert entries[0]["timings_ms"]["connect"] is not None
    (call,) = [e for e in entries if e["method"] == "tools/call"]
    assert call["timings_ms"]["connect"] is None  # a pooled connection: no connect
