"""Local names of remote tools: mcp__<server>__<tool>, safe for every model API."""

from __future__ import annotations

import re
from collections.abc import Collection

MAX_NAME = 64
PREFIX = "mcp__"  # reserved: no built-in, plugin or Python tool may take a name that starts with it
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def local_name(server: str, remote: str) -> str:
    return f"{PREFIX}{server}__{_UNSAFE.sub('_', remote)}"


def server_of(name: str) -> str | None:
    """The server part of a local MCP name (server names never hold `__`), or None for other names."""
    if not name.startswith(PREFIX):
        return None
    return name[len(PREFIX) :].split("__", 1)[0]


def reserved_clash(name: str, mcp_tools: Collection[str] = ()) -> str | None:
    """Why a tool that is not an MCP tool may not be called `name`, naming the MCP side; None when it may."""
    server = server_of(name)
    if server is None:
        return None
    if name in mcp_tools:
        return f"it would replace the tool '{name}' of MCP server '{server}' (config/mcp.toml)"
    return f"the {PREFIX} prefix is reserved for tools of MCP servers in config/mcp.toml"
