"""`%cireil mcp [SERVER]` (the server panel) and `%cireil mcp log [SERVER] [--limit N] [--export FILE]`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.display import display

if TYPE_CHECKING:
    from ..runtime.agent import Agent

USAGE = "%cireil mcp [SERVER]  or  %cireil mcp log [SERVER] [--limit N] [--export FILE.jsonl]"
DEFAULT_SHOWN = 50


def mcp_command(agent: Agent, args: list[str]) -> None:
    if args[:1] == ["log"]:
        show_log(agent, args[1:])
        return
    if len(args) > 1 or (args and args[0].startswith("-")):
        raise UsageError(f"usage: {USAGE}")
    servers = list(agent.mcp_clients())
    if not servers:
        print(f"agent '{agent.slug}' has no MCP servers (config/mcp.toml)")
        return
    from .mcpviews import ServerPanel

    for server in args or servers:
        agent._mcp_client(server)  # an unknown name fails with the list of servers, before any widget
        display(ServerPanel(agent, server))


def show_log(agent: Agent, args: list[str]) -> None:
    server, limit, export = None, DEFAULT_SHOWN, None
    words = iter(args)
    for word in words:
        if word in ("--limit", "--export") or word.startswith(("--limit=", "--export=")):
            name, _, value = word.partition("=")
            value = value or next(words, "")
            if not value:
                raise UsageError(f"{name} needs a value; usage: {USAGE}")
            if name == "--limit":
                if not value.isdigit():
                    raise UsageError(f"--limit needs a whole number, not {value!r}")
                limit = int(value)
            else:
                export = value
        elif word.startswith("-"):
            raise UsageError(f"unknown option {word!r}; usage: {USAGE}")
        elif server is not None:
            raise UsageError(f"one server only (got {server!r} and {word!r})")
        else:
            server = word
    if export is not None:
        count = agent.export_mcp_log(export, server)
        print(f"wrote {count} exchange{'s' if count != 1 else ''} to {export} (JSON lines, secrets masked)")
        return
    from .mcpviews import WireLogView

    scope = f"server '{server}'" if server else "all MCP servers"
    display(WireLogView(agent.mcp_log(server, limit), scope))
