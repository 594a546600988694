"""One name, one tool (spec "HTTP MCP tools": collisions fail startup rather than overwriting another tool).

Built-in, plugin, Python and MCP tools share one namespace. A clash fails dry-run and load and names both
sides; the only replacement allowed is a plugin's allowOverride of a built-in. `mcp__` belongs to MCP tools.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import cireil
from cireil import Tool
from cireil.params import Params
from cireil.runtime.base.errors import ConfigError
from conftest import make_agent
from mcp_peers.launch import mcp_toml
from pluginkit import local_plugin, shadow

pytest_plugins = ("mcp_peers.fixtures",)


def runtime_agent(tmp_path: Path, plugins_toml: str, tools: str, servers: dict[str, str] | None = None) -> Path:
    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    (root / "config" / "plugins.toml").write_text(plugins_toml)
    agent = make_agent(root / "agents", tools, name="a")
    if servers:
        (agent / "config" / "mcp.toml").write_text(mcp_toml(servers))
    return agent


def both_fail(agent: Path) -> list[str]:
    report = cireil.dry_run(agent)
    with pytest.raises(ConfigError) as info:
        cireil.load(agent)
    messages = [str(i) for i in report.errors]
    assert messages and all(m in str(info.value) for m in messages)  # load stops for the same reasons
    return messages


def test_a_plugin_tool_cannot_shadow_a_discovered_mcp_tool(tmp_path, sdk_sse):
    agent = runtime_agent(tmp_path, '[[plugins]]\nname = "p"\n', "mcp__demo__add = true\n", {"demo": sdk_sse})
    local_plugin(agent, "p", shadow("p", "mcp__demo__add"))
    assert both_fail(agent) == [
        "../../config/plugins.toml:1: plugin 'p': tool 'mcp__demo__add': it would replace the tool "
        "'mcp__demo__add' of MCP server 'demo' (config/mcp.toml)"
    ]


def test_allow_override_does_not_extend_to_mcp_tools(tmp_path, sdk_sse):
    toml = '[[plugins]]\nname = "p"\nallowOverride = true\n'
    agent = runtime_agent(tmp_path, toml, "mcp__demo__add = true\n", {"demo": sdk_sse})
    local_plugin(agent, "p", shadow("p", "mcp__demo__add"))
    assert "of MCP server 'demo'" in both_fail(agent)[0]


def test_the_mcp_prefix_is_reserved_even_without_such_a_server(tmp_path):
    agent = runtime_agent(tmp_path, '[[plugins]]\nname = "p"\n', "mcp__ghost__x = true\n")
    local_plugin(agent, "p", shadow("p", "mcp__ghost__x"))
    assert both_fail(agent)[0] == (
        "../../config/plugins.toml:1: plugin 'p': tool 'mcp__ghost__x': the mcp__ prefix is reserved for tools "
        "of MCP servers in config/mcp.toml"
    )


async def _run(args, ctx):
    return {"from": "python"}


def test_a_python_tool_cannot_take_an_mcp_name(tmp_path, sdk_sse):
    agent = make_agent(tmp_path, "mcp__demo__add = true\n")
    (agent / "config" / "mcp.toml").write_text(mcp_toml({"demo": sdk_sse}))
    impostor = Tool("mcp__demo__add", "Pretends to add.", Params(), _run)
    expected = "tool 'mcp__demo__add' defined in Python: the mcp__ prefix is reserved for tools of MCP servers"
    with pytest.raises(ValueError, match=expected):
        cireil.dry_run(agent, tools=[impostor])
    with pytest.raises(ValueError, match=expected):
        cireil.load(agent, tools=[impostor])


def test_a_plugin_and_a_python_tool_of_one_name_fail_naming_both(tmp_path):
    agent = runtime_agent(tmp_path, '[[plugins]]\nname = "p"\n', "twin = true\n")
    local_plugin(agent, "p", shadow("p", "twin"))
    twin = Tool("twin", "Python's twin.", Params(), _run)
    report = cireil.dry_run(agent, tools=[twin])
    assert [str(i) for i in report.errors] == [
        "../../config/plugins.toml:1: plugin 'p': tool 'twin' is also defined in Python"
    ]
    with pytest.raises(ConfigError, match="also defined in Python"):
        cireil.load(agent, tools=[twin])


def test_the_discovered_mcp_tool_is_what_gets_called_when_nothing_clashes(tmp_path, sdk_sse):
    agent = runtime_agent(
        tmp_path, '[[plugins]]\nname = "p"\n', "mcp__demo__add = true\nadd = true\n", {"demo": sdk_sse}
    )
    local_plugin(agent, "p", shadow("p", "add"))  # a plugin tool may share the remote part of the name
    loaded = cireil.load(agent)
    try:
        assert loaded.tool("mcp__demo__add").origin.startswith("mcp:demo")
        assert loaded.tool("add").origin == "plugin:p"
        assert loaded.call("mcp__demo__add", a=2, b=2)["content"][0]["text"] == "4"
    finally:
        loaded.close()
