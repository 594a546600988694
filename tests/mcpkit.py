"""An agent whose mcp.toml names the given MCP servers: load it, or expect it to fail to load the same way in
dry-run and load (shared by the MCP agent, modern-protocol and hostile MCP tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError
from conftest import make_agent
from mcp_peers.launch import mcp_toml

ENABLED = "list-dir = true\nmcp__demo__add = true\nmcp__demo__ns_dotted-name = true\nmcp__demo__fail = true\n"


def agent_with(tmp_path: Path, servers: dict[str, str], tools: str = ENABLED, **kw) -> Path:
    agent = make_agent(tmp_path, tools)
    (agent / "config" / "mcp.toml").write_text(mcp_toml(servers, **kw))
    return agent


def load(tmp_path: Path, servers: dict[str, str], tools: str = ENABLED, **kw) -> cireil.Agent:
    return cireil.load(agent_with(tmp_path, servers, tools, **kw))


def load_error(tmp_path: Path, servers: dict[str, str], tools: str = "list-dir = true\n", **kw) -> str:
    agent = agent_with(tmp_path, servers, tools, **kw)
    report = cireil.dry_run(agent)
    assert not report.ok
    with pytest.raises(ConfigError) as info:
        cireil.load(agent)
    assert str(report.errors[0]) in str(info.value)  # dry-run and load stop for the same reason
    return str(report.errors[0])
