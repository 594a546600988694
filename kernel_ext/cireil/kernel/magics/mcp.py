"""`%cireil mcp [SERVER]` (the server panel) and `%cireil mcp log [SERVER] [--limit N] [--export FILE]`.

Their options are declared in commands.py."""

from __future__ import annotations

from argparse import Namespace
from typing import TYPE_CHECKING

from IPython.display import display

if TYPE_CHECKING:
    from ...runtime.agent import Agent


def show_servers(agent: Agent, server: str | None) -> None:
    servers = list(agent.mcp_clients())
    if not servers:
        print(f"agent '{agent.slug}' has no MCP servers (config/mcp.toml)")
        return
    from ..views.mcp import ServerPanel

    for name in [server] if server else servers:
        agent._mcp_client(name)  # an unknown name fails with the list of servers, before any widget
        display(ServerPanel(agent, name))


def show_log(agent: Agent, o: Namespace) -> None:
    if o.export is not None:
        count = agent.export_mcp_log(o.export, o.server)
        print(f"wrote {count} exchange{'s' if count != 1 else ''} to {o.export} (JSON lines, secrets masked)")
        return
    from ..views.mcp import WireLogView

    scope = f"server '{o.server}'" if o.server else "all MCP servers"
    display(WireLogView(agent.mcp_log(o.server, o.limit), scope))
