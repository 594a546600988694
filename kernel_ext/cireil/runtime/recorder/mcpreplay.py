"""MCP calls of a replayed or forked turn answered from the turn's cassette, never from the live servers.

A recorded turn keeps its MCP traffic as a cassette (cireil.testing.mcp_cassette: each server's tools/list
and every tools/call with its answer). A replay runs on a throwaway copy of the agent whose config/mcp.toml
is rewritten here so that every server points at one McpMock on loopback serving that cassette (headers
dropped: nothing secret is needed offline). A fork, or an in-place replay, runs on the agent itself, whose
MCP connections stay as they are: there an `on_tool_call` hook answers each MCP call through a client of
the mock instead (the call is recorded as mocked: it did not run). A call the cassette has no answer for
fails with the mock's message naming the server, the tool and the nearest recorded arguments.

`live_mcp=True` skips all of this: the real servers are called, as before cassettes existed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..mcp.naming import local_name, server_of

if TYPE_CHECKING:
    from .model import RecordedTurn

FORMAT = "cireil-mcp-cassette/1"


def mcp_servers_used(turn: RecordedTurn) -> list[str]:
    """The MCP servers the turn called, in order of first call."""
    return list(dict.fromkeys(s for c in turn.calls if (s := server_of(str(c.name))) is not None))


def served_cassette(turn: RecordedTurn, cassette: dict | None, live_mcp: bool) -> dict | None:
    """The cassette a replay of `turn` serves its MCP calls from, or None when the live servers answer (asked
    for, or nothing to serve). ValueError for a turn that called MCP tools but was recorded without one."""
    if live_mcp:
        return None
    if cassette is None:
        cassette = getattr(turn, "cassette", None)
    if cassette is None:
        used = mcp_servers_used(turn)
        if used:
            names = ", ".join(f"'{s}'" for s in used)
            raise ValueError(
                f"turn {turn.id} called MCP server(s) {names} but was recorded before cireil kept MCP answers; "
                "it can only be replayed against the live servers: pass live_mcp=True (--live-mcp)"
            )
        return None
    return cassette


def merged(cassettes: Iterable[dict | None]) -> dict | None:
    """One cassette answering several turns run in order (an exported notebook): each server's calls
    one after the other, its latest tools/list."""
    out: dict[str, Any] = {"format": FORMAT, "servers": {}}
    found = False
    for cassette in cassettes:
        if not cassette:
            continue
        found = True
        for name, server in (cassette.get("servers") or {}).items():
            into = out["servers"].setdefault(name, {**copy.deepcopy(server), "calls": []})
            into.update({k: copy.deepcopy(v) for k, v in server.items() if k != "calls"})
            into["calls"].extend(copy.deepcopy(server.get("calls") or []))
    return out if found else None


def with_every_server(cassette: dict, agent_dir: str | Path) -> dict:
    """`cassette` plus an empty entry (no tool, no call) for each server of the agent's mcp.toml it does not
    know: the copy loads with every server on the mock, and nothing of a server the turn never reached is
    ever sent live."""
    out = copy.deepcopy(cassette)
    servers = out.setdefault("servers", {})
    for name in _configured(Path(agent_dir)):
        servers.setdefault(name, {"revision": None, "serverInfo": None, "instructions": None, "tools": [], "calls": []})
    return out


def _configured(directory: Path) -> list[str]:
    """The server names of the agent's config/mcp.toml (none when it has no such file)."""
    import tomlkit

    from ..files.layout import AgentLayout

    path = AgentLayout.find(directory).directory / "config" / "mcp.toml"
    if not path.is_file():
        return []
    servers = tomlkit.parse(path.read_text(encoding="utf-8")).get("servers") or {}
    return [str(name) for name in servers] if isinstance(servers, dict) else []


def point_mcp_at(directory: Path, urls: dict[str, str], unlisted: Iterable[str] = ()) -> None:
    """Every server of the copy's mcp.toml talks to the mock at `urls[name]`, without its headers (the
    secrets stay behind); its other keys (timeout) are kept. The tools of `unlisted` servers (the recording
    has no tools/list of theirs: the turn never reached them) are left out of the copy's tools.toml, so that
    the copy loads; a call to one fails as a call to a tool that is not enabled."""
    import tomlkit

    path = directory / "config" / "mcp.toml"
    if not path.is_file():
        return
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    servers = doc.get("servers")
    if not isinstance(servers, dict):
        return
    for name, table in servers.items():
        if isinstance(table, dict) and name in urls:
            table["url"] = urls[name]
            table.pop("headers", None)
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")
    prefixes = tuple(f"mcp__{name}__" for name in unlisted)
    tools = directory / "config" / "tools.toml"
    if prefixes and tools.is_file():
        table = tomlkit.parse(tools.read_text(encoding="utf-8"))
        for key in [k for k in table if str(k).startswith(prefixes)]:
            del table[key]
        tools.write_text(tomlkit.dumps(table), encoding="utf-8")


def point_copy_at_mock(directory: Path, mock: Any) -> None:
    """`point_mcp_at` for a started McpMock: its URLs, and the servers whose tools it cannot list."""
    unlisted = [name for name, entry in mock.cassette.servers.items() if not entry.get("tools")]
    point_mcp_at(directory, mock.urls, unlisted)


def start_mock(cassette: dict) -> Any:
    """An McpMock serving `cassette` on loopback, started."""
    from ...testing.mcp_mock import McpMock

    return McpMock(cassette).start()


class RecordedMcp:
    """An `on_tool_call` hook answering MCP calls through a client of the mock (fork, in-place replay); other
    calls go to `then` (another hook, or None: run as asked). Use as an async context manager."""

    def __init__(self, cassette: dict, then: Any = None) -> None:
        self.cassette = cassette
        self.then = then
        self.mock: Any = None
        self.clients: dict[str, Any] = {}
        self.remote: dict[str, tuple[str, str]] = {}  # local tool name -> (server, remote tool name)
        for server, entry in (cassette.get("servers") or {}).items():
            for spec in entry.get("tools") or ():
                if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                    self.remote[local_name(server, spec["name"])] = (server, spec["name"])
            for call in entry.get("calls") or ():
                if isinstance(call, dict) and isinstance(call.get("tool"), str):
                    self.remote.setdefault(local_name(server, call["tool"]), (server, call["tool"]))

    async def __aenter__(self) -> RecordedMcp:
        self.mock = start_mock(self.cassette)
        return self

    async def __aexit__(self, *exc: object) -> None:
        import asyncio

        await asyncio.gather(*(c.close() for c in self.clients.values()), return_exceptions=True)
        if self.mock is not None:
            self.mock.stop()

    async def __call__(self, call: dict, step: int) -> Any:
        from ..engine.toolhook import ToolDecision
        from ..mcp.errors import McpError

        arguments = dict(call.get("input") or {})
        if self.then is not None:
            decided = await self.then(call, step) if _is_async(self.then) else self.then(call, step)
            if decided is not None and decided.action != "edit":
                return decided  # a substituted or skipped result: the recording's decision wins
            if decided is not None:
                arguments = dict(decided.arguments)
        name = str(call.get("name") or "")
        server = server_of(name)
        if server is None:
            return ToolDecision.edit(arguments) if arguments != dict(call.get("input") or {}) else None
        found = self.remote.get(name)
        if found is None:
            message = (
                f"MCP server '{server}': the recording has no answer for {name} (server '{server}' was not "
                "reached in the recorded turn); pass live_mcp=True to call the live server"
            )
            return ToolDecision.mock({"error": message, "success": False})
        remote = found[1]
        try:
            client = await self._client(server)
            result = await client.call_tool(remote, arguments)
        except McpError as exc:
            return ToolDecision.mock({"error": f"MCP server '{server}': {exc}", "success": False})
        return ToolDecision.mock(result)

    async def _client(self, server: str) -> Any:
        from ..config.mcp_config import McpServer
        from ..mcp.client import McpClient

        if server not in self.clients:
            client = McpClient(McpServer(name=server, url=self.mock.url(server)))
            await client.connect()
            self.clients[server] = client
        return self.clients[server]


def _is_async(fn: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(fn)
