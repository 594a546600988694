"""Remote-session tool grants (spec: "Remote-session grants still filter and authorize enabled MCP tools as
harness tools"): a notebook session is remote; its grant narrows the enabled tools it may use, for built-in,
plugin and MCP tools alike: a turn is offered only granted tools, and a call of any other one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

import cireil
from cireil.testing.scripted_llm import reply
from magicshell import loaded, run, usage_error
from mcp_peers.launch import mcp_toml
from pluginkit import local_plugin, shadow
from turnkit import engine_toml

pytest_plugins = ("mcp_peers.fixtures",)

TOOLS = "respond = true\nno-response = true\nread = true\nwrite = true\nshout = true\nmcp__q__echo = true\n"


def agent_dir(tmp_path: Path, rogue, base_url: str = "http://127.0.0.1:9/v1") -> Path:
    from conftest import make_agent

    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    (root / "config" / "plugins.toml").write_text('[[plugins]]\nname = "p"\n')
    agent = make_agent(root / "agents", TOOLS, name="a")
    local_plugin(agent, "p", shadow("p", "shout"))
    (agent / "config" / "mcp.toml").write_text(mcp_toml({"q": rogue.url("/quirky")}))
    (agent / "config" / "engine.toml").write_text(engine_toml(base_url))
    return agent


def test_a_grant_authorizes_built_in_plugin_and_mcp_calls_alike(tmp_path, rogue):
    agent = cireil.load(agent_dir(tmp_path, rogue))
    try:
        assert agent.session.platform == "remote"
        agent.grant(["read", "mcp__q__echo"])
        assert agent.call("read", path="/workspace/hello.txt").success
        assert agent.call("mcp__q__echo", x=1).success
        for name, args in (("write", {"path": "/workspace/x.txt", "content": "x"}), ("shout", {})):
            refused = agent.call(name, args)
            assert not refused.success
            assert refused["error"] == (
                f"Tool '{name}' is not granted to session 'notebook:main' (granted: mcp__q__echo, read)."
            )
        assert not (agent.directory / "workspace" / "x.txt").exists()

        calls = rogue.methods("/quirky").count("tools/call")
        agent.grant(["shout"])  # now the MCP tool is the one withheld: refused before the wire
        assert agent.call("shout")["from"] == "p"
        assert not agent.call("mcp__q__echo", x=2).success
        assert rogue.methods("/quirky").count("tools/call") == calls

        agent.grant(None)  # every enabled tool again
        assert agent.call("write", path="/workspace/x.txt", content="x").success
        # another session keeps its own grant
        agent.grant(["read"], session="reviewer")
        assert agent.session_for("notebook:reviewer").grant == frozenset({"read"})
        assert agent.session.grant is None
    finally:
        agent.close()


def test_a_grant_narrows_tools_toml_and_never_widens_it(tmp_path, rogue):
    agent = cireil.load(agent_dir(tmp_path, rogue))
    try:
        agent.grant(["read", "exec", "list-dir"])  # known tools, not enabled: granting them enables nothing
        assert [t["name"] for t in agent.prompt().model_request.tools] == ["respond", "no-response", "read"]
        assert agent.grant_text() == (
            "granted: respond, no-response, read; withheld: write, shout, mcp__q__echo; "
            "granted but not enabled in tools.toml: exec, list-dir"
        )
        with pytest.raises(ValueError, match="cannot grant 'raed': agent 'a' has no such tool \\(did you mean 'read'"):
            agent.grant(["raed"])
        with pytest.raises(ValueError, match="grants apply to remote \\(adapter-owned\\) sessions only"):
            agent.grant(["read"], session="internal:diary")
    finally:
        agent.close()


def _offered(body: dict) -> list[str]:
    return [t["function"]["name"] for t in body["tools"]]


def test_turns_offer_only_granted_tools_and_refuse_the_rest(tmp_path, rogue, llm):
    agent = cireil.load(agent_dir(tmp_path, rogue, llm.base_url))
    try:
        agent.grant(["read", "shout"])
        calls = rogue.methods("/quirky").count("tools/call")
        llm.script(
            reply.tool_calls(("mcp__q__echo", {"x": 1}), ("write", {"path": "/workspace/y.txt", "content": "y"})),
            reply.tool_calls(("shout", {}), ("respond", {"content": "done"})),
        )
        outcome = agent.turn("go")
        assert outcome.ended == "respond"
        assert _offered(llm.requests[0].body) == ["respond", "no-response", "read", "shout"]
        results = {m["name"]: m["output"] for m in agent.session.history if m["role"] == "toolResponse"}
        assert "not granted to session 'notebook:main'" in results["mcp__q__echo"]["error"]
        assert "not granted" in results["write"]["error"]
        assert results["shout"] == {"from": "p"}
        assert rogue.methods("/quirky").count("tools/call") == calls
        assert not (agent.directory / "workspace" / "y.txt").exists()

        agent.grant(None)
        llm.script(reply.tool_calls(("respond", {"content": "all"})))
        agent.turn("again")
        assert _offered(llm.requests[2].body) == [
            "respond",
            "no-response",
            "read",
            "write",
            "shout",
            "mcp__q__echo",
        ]
    finally:
        agent.close()


def test_session_magic_sets_the_grant_and_context_shows_it(shell, tmp_path, rogue):
    loaded(shell, agent_dir(tmp_path, rogue))  # unloading the extension (the fixture) closes the agent
    card = run(shell, "%cireil session --grant read,mcp__q__echo").text
    assert "tools: granted: respond, no-response, read, mcp__q__echo; withheld: write, shout" in card
    context = run(shell, "%cireil context").text
    assert "tools: granted: respond, no-response, read, mcp__q__echo; withheld: write, shout" in context
    refused = run(shell, "%cireil_write /workspace/z.txt content=z").value
    assert not refused.success and "not granted" in refused["error"]
    assert "did you mean 'write'" in usage_error(shell, "%cireil session --grant wrte")
    assert "--grant needs" in usage_error(shell, "%cireil session --grant")
    card = run(shell, "%cireil session other --grant all").text
    assert "session: notebook:other" in card and "tools: all 6 enabled tools (no grant" in card
    assert "tools:" not in run(shell, "%cireil context").text  # no grant, nothing to say
