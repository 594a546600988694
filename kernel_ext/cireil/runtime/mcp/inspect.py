"""What a person asks of an agent's MCP servers: the wire log, each server's state, a reconnect.

A mixin of Agent (agent.py) so that the agent module only names it; nothing here imports httpx.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import CireilError
from ..base.secrets import mask, mask_url

if TYPE_CHECKING:
    from .client import McpClient


class McpInspection:
    """Agent methods about MCP servers; `_snapshot.mcp` holds the connections made at load."""

    _snapshot: Any

    def mcp_clients(self) -> dict[str, McpClient]:
        """The connected servers by name (those of mcp.toml, as discovered at load or restart)."""
        found = self._snapshot.mcp
        return {c.server.name: c for c in found.clients} if found is not None else {}

    def _mcp_client(self, server: str) -> McpClient:
        clients = self.mcp_clients()
        if server not in clients:
            known = ", ".join(clients) or "none (config/mcp.toml configures no server)"
            raise CireilError(f"no MCP server '{server}'; servers: {known}")
        return clients[server]

    def mcp_log(self, server: str | None = None, limit: int | None = None) -> list[dict]:
        """The recent wire exchanges (oldest first) of one server or all; secrets masked. JSON-ready dicts."""
        clients = [self._mcp_client(server)] if server else list(self.mcp_clients().values())
        entries = [e for c in clients for e in c.wire.entries()]
        entries.sort(key=lambda e: (e["at"], e["server"], e["seq"]))
        if limit is not None:
            entries = entries[-limit:] if limit > 0 else []
        return entries

    def export_mcp_log(self, path: str | Path, server: str | None = None) -> int:
        """Write the wire log as JSON lines (one exchange a line); returns how many were written."""
        from .wirelog import write_jsonl

        return write_jsonl(self.mcp_log(server), str(path))

    def mcp_status(self, server: str | None = None) -> list[dict]:
        """What the server panel shows, per server: URL, revision, session, capabilities, instructions..."""
        clients = [self._mcp_client(server)] if server else list(self.mcp_clients().values())
        return [server_status(c) for c in clients]

    def mcp_reconnect(self, server: str) -> dict:
        """A new transport to `server` (handshake or probe again, new session); tool definitions stay until restart."""
        from ..base.loop import RUNTIME
        from .errors import McpError

        client = self._mcp_client(server)
        try:
            RUNTIME.run(client.reconnect())
        except McpError as exc:
            raise CireilError(f"MCP server '{server}': cannot reconnect: {exc}") from None
        return server_status(client)


def server_status(client: McpClient) -> dict:
    transport = client.transport
    init = transport.init_result or {}
    if client.closed:
        session = "closed"
    elif transport.modern:
        session = "none: 2026-07-28 is sessionless"
    elif transport.session_id:
        session = f"session {transport.session_id}"
    elif transport.version:
        session = "no session (the server is stateless)"
    else:
        session = "not connected"
    url, shown = client.server.url, mask_url(client.server.url)
    info = init.get("serverInfo") or (init.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
    return {
        "server": client.server.name,
        "url": shown,
        "revision": transport.version,
        "session": session,
        "server_info": info if isinstance(info, dict) else None,
        "capabilities": init.get("capabilities") if isinstance(init.get("capabilities"), dict) else {},
        "instructions": mask(client.instructions),
        "tools": client.tool_count,
        "unusable_tools": dict(client.unusable),
        "connected_at": _iso(client.connected_at),
        "errors": [{"at": _iso(at), "error": mask(text.replace(url, shown))} for at, text in client.errors],
        "wire_log": {"kept": len(client.wire), "capacity": client.wire.capacity},
        "timeout_ms": client.server.timeout,
    }


def _iso(at: float | None) -> str | None:
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
