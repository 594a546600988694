"""An MCP server seen as a tool provider: connect and list its tools, then call them."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..config.mcp_config import McpServer
from .errors import McpError, McpTimeout
from .h1conn import HttpError, HttpProtocolError
from .headers import Path as ArgPath
from .headers import param_headers, param_marks
from .negotiate import open_connection
from .spill import SPILLED, Spill
from .transport import Transport
from .wirelog import WireLog

T = TypeVar("T")
MAX_PAGES = 100  # servers that hand back the same cursor forever must not hang discovery


class McpClient:
    def __init__(self, server: McpServer, *, probe: bool = True) -> None:
        """`probe=False` skips the 2026-07-28 probe and goes straight to the handshake (benchmarks compare eras)."""
        self.server = server
        self.wire = WireLog(server.name, server.url, server.headers)
        self.transport = Transport(server.url, server.headers, self.wire)
        self.errors: deque[tuple[float, str]] = deque(maxlen=10)  # (when, what failed): the server panel shows them
        self.tool_count = 0  # tools the server listed at connect
        self.connected_at: float | None = None
        self.closed = False
        self.instructions: str = ""
        self.probe = probe
        self.unusable: dict[str, str] = {}  # remote tool name -> why it cannot be offered
        self._marks: dict[str, dict[ArgPath, str]] = {}  # remote tool name -> arguments mirrored in headers
        # what the server said at connect, as it said it, for the turn recorder's cassette: built once, and
        # each call's result references it (a dict of references, not a copy)
        self.listing: dict[str, Any] = {"revision": None, "serverInfo": None, "instructions": None, "tools": []}

    @property
    def revision(self) -> str | None:
        """The protocol revision the server and this client agreed on (None before connect)."""
        return self.transport.version

    @property
    def timeout_s(self) -> float:
        return self.server.timeout / 1000

    async def connect(self) -> list[dict]:
        """Probe or initialize, then list every tool, all within the server's one timeout."""

        async def work() -> list[dict]:
            result = await open_connection(self.transport, probe=self.probe)
            instructions = result.get("instructions")
            self.instructions = instructions.strip() if isinstance(instructions, str) else ""
            listed: list[dict] = []
            tools = await self._list_tools(listed)
            self.listing = {
                "revision": self.revision,
                "serverInfo": _server_info(result),
                "instructions": instructions if isinstance(instructions, str) else None,
                "tools": listed,
            }
            self.connected_at = time.time()
            return tools

        return await self._bounded(work, "connecting and listing tools")

    async def _list_tools(self, listed: list[dict]) -> list[dict]:
        """The tools cireil can offer; `listed` gets every tool of every page, as the server sent it."""
        tools: list[dict] = []
        cursor: Any = None
        for _ in range(MAX_PAGES):
            result = await self.transport.request("tools/list", {"cursor": cursor} if cursor is not None else None)
            page = result.get("tools")
            if not isinstance(page, list) or not all(isinstance(t, dict) for t in page):
                raise McpError("tools/list result has no list of tools")
            self.tool_count += len(page)
            listed += page
            tools += [t for t in page if self._usable(t)]
            cursor = result.get("nextCursor")
            if cursor is None:
                return tools
        raise McpError(f"tools/list still had more pages after {MAX_PAGES}; stopped")

    def _usable(self, tool: dict) -> bool:
        """A modern tool whose x-mcp-header marks are invalid must not be offered (its calls cannot be routed)."""
        if not self.transport.modern:
            return True
        try:
            marks = param_marks(tool.get("inputSchema"))
        except ValueError as exc:
            self.unusable[str(tool.get("name"))] = str(exc)
            return False
        if marks and isinstance(tool.get("name"), str):
            self._marks[tool["name"]] = marks
        return True

    async def call_tool(self, name: str, arguments: dict, spill: Spill | None = None) -> dict:
        """The result as the agent sees it: content blocks and structuredContent as JSON, isError -> failure.

        With `spill`, an answer too big to hold is kept on disk and the result is its beginning with a note."""
        return tool_result(name, await self.call(name, arguments, spill))

    async def call(self, name: str, arguments: dict, spill: Spill | None = None) -> dict:
        """The tools/call JSON-RPC result as the server sent it (a spilled one: see spill.py); McpError on failure."""
        marks = self._marks.get(name)
        extra = param_headers(marks, arguments) if marks else None
        return await self._bounded(
            lambda: self.transport.request("tools/call", {"name": name, "arguments": arguments}, extra, spill),
            f"calling {name}",
        )

    async def _bounded(self, work: Callable[[], Awaitable[T]], what: str) -> T:
        """One overall deadline; network and protocol failures become McpError naming the server."""
        try:
            async with asyncio.timeout(self.timeout_s):
                return await work()
        except TimeoutError:
            error = McpTimeout(
                f"timed out after {self.server.timeout} ms {what} (the remote operation may still have taken effect)"
            )
        except HttpProtocolError as exc:
            error = McpError(f"bad HTTP answer from {self.server.url}: {exc}")
        except HttpError as exc:
            error = McpError(f"cannot reach {self.server.url}: {exc or type(exc).__name__}")
        except McpError as exc:
            self.errors.append((time.time(), f"{what}: {exc}"))
            raise
        self.errors.append((time.time(), f"{what}: {error}"))
        raise error from None

    async def reconnect(self) -> str | None:
        """A new transport (probe or handshake, a new session) in place of the current one; returns the revision.

        The tool definitions found at connect stay as they are (spec: fixed until restart): tools/list is
        not asked again. On failure the current transport stays in place.
        """
        fresh = Transport(self.server.url, self.server.headers, self.wire)
        try:
            await self._bounded(lambda: open_connection(fresh, probe=self.probe), "reconnecting")
        except BaseException:
            await fresh.close()
            raise
        old, self.transport = self.transport, fresh
        self.connected_at = time.time()
        self.closed = False
        await old.close()
        self.listing = self.listing | {"revision": fresh.version}  # a new dict: results already made keep theirs
        return fresh.version

    async def close(self) -> None:
        self.closed = True
        await self.transport.close()


def tool_result(name: str, result: dict) -> dict:
    """A tools/call result as the agent sees it: content and structuredContent as JSON, isError -> failure."""
    if SPILLED in result:
        return {"content": result["content"], "resultTruncated": result["resultTruncated"]}
    content = result.get("content")
    out: dict[str, Any] = {"content": content if isinstance(content, list) else []}
    if "structuredContent" in result:
        out["structuredContent"] = result["structuredContent"]
    if result.get("isError") is True:
        texts = [b.get("text", "") for b in out["content"] if isinstance(b, dict) and b.get("type") == "text"]
        out["error"] = "\n".join(t for t in texts if t) or f"{name} reported an error"
        out["success"] = False
    return out


def _server_info(result: dict) -> Any:
    """initialize's serverInfo, or where a 2026-07-28 server/discover result carries it (its _meta)."""
    if "serverInfo" in result:
        return result["serverInfo"]
    meta = result.get("_meta")
    return meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, dict) else None
