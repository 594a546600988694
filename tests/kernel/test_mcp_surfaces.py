"""MCP tools in the notebook: their magic, their form built from the remote schema, their origin."""

from __future__ import annotations

import time

import cireil
from cireil.kernel.forms.toolform import tool_form
from cireil.render import RESULT_MIME
from conftest import make_agent
from mcp_peers.launch import mcp_toml

TOOLS = "list-dir = true\nmcp__demo__add = true\nmcp__demo__weather = true\n"

pytest_plugins = ("mcp_peers.fixtures",)  # the SDK and rogue servers


def test_the_form_is_built_from_the_remote_schema_and_runs(tmp_path, sdk_sse):
    agent_dir = make_agent(tmp_path, TOOLS)
    (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"demo": sdk_sse}))
    agent = cireil.load(agent_dir)
    try:
        form = tool_form(agent, "mcp__demo__add")
        assert set(form.fields) == {"a", "b"}
        form.fields["a"].control.value = 4
        form.fields["b"].control.value = 5
        form.run_button.click()
        assert form.wait(10)
        result = form.last_call.result(0)
        assert result.success and result["content"][0]["text"] == "9"
    finally:
        agent.close()


def test_magic_call_returns_the_result_bundle_and_tools_lists_origins(tmp_path, kernel, sdk_sse):
    agent_dir = make_agent(tmp_path, TOOLS)
    (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"demo": sdk_sse}))
    kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
    bundle = kernel.run("%cireil_mcp__demo__add a=20 b=22").result
    assert bundle["application/vnd.cireil.result+json"]["content"] == [{"type": "text", "text": "42"}]
    assert "42" in bundle["text/plain"]
    assert "<script" not in bundle["text/html"]
    weather = kernel.run('%cireil_mcp__demo__weather {"city": "Oslo"}').result
    assert weather["application/vnd.cireil.result+json"]["structuredContent"]["city"] == "Oslo"
    assert "<details" in weather["text/html"]  # structured content as a collapsible tree
    listing = kernel.run("%cireil tools").bundles[-1]
    html = listing["text/html"]
    assert "mcp:demo" in html and "built-in" in html
    assert "mcp__demo__add" in listing["text/plain"]


def test_a_kernel_interrupt_cancels_the_remote_call(tmp_path, kernel, sdk_sse, mcp_marker):
    mcp_marker.unlink(missing_ok=True)
    agent_dir = make_agent(tmp_path, "mcp__demo__slow = true\nmcp__demo__add = true\n")
    (agent_dir / "config" / "mcp.toml").write_text(mcp_toml({"demo": sdk_sse}))
    kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
    msg_id = kernel.submit("%cireil_mcp__demo__slow seconds=60")
    time.sleep(1.0)  # the call is on the wire: the server is sleeping in the tool
    kernel.interrupt()
    run = kernel.collect(msg_id, timeout=30)
    assert run.error["ename"] == "KeyboardInterrupt"
    for _ in range(100):  # the server saw notifications/cancelled and cancelled its handler
        if mcp_marker.exists():
            break
        time.sleep(0.05)
    assert mcp_marker.read_text() == "cancelled"
    assert kernel.run("%cireil_mcp__demo__add a=1 b=2").result[RESULT_MIME]["content"][0]["text"] == "3"
