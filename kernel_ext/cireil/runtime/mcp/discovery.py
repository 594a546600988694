"""Discovery at load: every configured server connected, its tools turned into cireil Tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..base.errors import ConfigIssue, ToolError
from ..base.jsonbound import MAX_DEPTH
from ..base.params import RawObject
from ..config.mcp_config import McpServer
from ..toolkit.resultcap import RESULT_LIMIT
from ..toolkit.tool import Tool, ToolContext
from .client import McpClient, tool_result
from .errors import McpError, McpTimeout
from .jsonrpc import TOO_DEEP_MARK
from .naming import MAX_NAME, local_name
from .spill import SPILLED, Spill
from .wirelog import CAPTURE, Exchange

IssueAt = Callable[[McpServer, str], ConfigIssue]


@dataclass
class Discovered:
    """What load found: tools by local name, and the live connections they call through."""

    tools: dict[str, Tool] = field(default_factory=dict)
    clients: list[McpClient] = field(default_factory=list)
    issues: list[ConfigIssue] = field(default_factory=list)

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.clients), return_exceptions=True)


async def discover(servers: list[McpServer], issue_at: IssueAt) -> Discovered:
    found = Discovered(clients=[McpClient(s) for s in servers])
    try:
        listings = await asyncio.gather(*(_connect(c) for c in found.clients))
    except BaseException:
        await found.close()  # an interrupted load leaves no sessions behind
        raise
    for client, listing in zip(found.clients, listings, strict=True):
        if isinstance(listing, str):
            found.issues.append(issue_at(client.server, f"server '{client.server.name}': {listing}"))
            continue
        _add_tools(found, client, listing, issue_at)
    return found


async def _connect(client: McpClient) -> list[dict] | str:
    try:
        return await client.connect()
    except McpError as exc:
        return f"cannot initialize or list tools at {client.server.url}: {exc}"


def _add_tools(found: Discovered, client: McpClient, listing: list[dict], issue_at: IssueAt) -> None:
    """Each tool the server lists, or a warning naming it: one bad definition leaves out that tool alone,
    and the server's other tools work."""
    server = client.server

    def dropped(message: str) -> ConfigIssue:
        issue = issue_at(server, f"{message}; this tool is left out, the server's other tools work")
        return replace(issue, severity="warning")

    remote_of: dict[str, str] = {}
    for spec in listing:
        remote = spec.get("name")
        if not isinstance(remote, str) or not remote:
            found.issues.append(dropped(f"server '{server.name}' lists a tool without a name"))
            continue
        if spec.get(TOO_DEEP_MARK) is True:
            found.issues.append(
                dropped(
                    f"server '{server.name}': tool {_quoted(remote)} has a definition nested deeper than "
                    f"{MAX_DEPTH} levels"
                )
            )
            continue
        name = local_name(server.name, remote)
        if len(name) > MAX_NAME:
            found.issues.append(  # an error: the server's name in mcp.toml is what makes it long
                issue_at(
                    server,
                    f"server '{server.name}': tool {_quoted(remote)} would be named {_quoted(name)}, "
                    f"over {MAX_NAME} characters",
                )
            )
            continue
        if name in remote_of or name in found.tools:
            other = remote_of.get(name, name)
            found.issues.append(
                issue_at(server, f"server '{server.name}': tools '{other}' and '{remote}' would both be named '{name}'")
            )
            continue
        if problem := _schema_problem(spec.get("inputSchema")):
            found.issues.append(dropped(f"server '{server.name}': tool {_quoted(remote)} {problem}"))
            continue
        remote_of[name] = remote
        found.tools[name] = _tool(client, name, remote, spec)


def _quoted(name: str) -> str:
    """A server's tool name in a message: short (it may be megabytes)."""
    return f"'{name}'" if len(name) <= 80 else f"'{name[:80]}…'"


def _schema_problem(schema: object) -> str | None:
    """Why an inputSchema cannot be given to a model as a tool's parameters; None when it can.

    Tool parameters are an object (the call's arguments are one); a server that lists something
    else would have it forwarded as is and the provider reject every request of the turn.
    """
    if schema is None:
        return None  # not listed at all: the tool takes no arguments (an empty object schema)
    if not isinstance(schema, dict):
        return f"has an inputSchema that is not a JSON Schema object but {type(schema).__name__}"
    kind = schema.get("type", "object")
    if kind != "object":
        shown = repr(kind) if isinstance(kind, str) and len(kind) <= 40 else f"a {type(kind).__name__}"
        return f'has an inputSchema of type {shown}; tool arguments must be an object schema (type "object")'
    return None


def _tool(client: McpClient, name: str, remote: str, spec: dict) -> Tool:
    schema = spec.get("inputSchema")
    if not isinstance(schema, dict):
        schema = {"type": "object", "properties": {}}
    description = spec.get("description") if isinstance(spec.get("description"), str) else ""
    if client.instructions:
        description = f"{description}\n\nServer instructions ({client.server.name}):\n{client.instructions}".strip()

    output_schema = spec.get("outputSchema")

    async def run(args: dict, ctx: ToolContext) -> dict:
        captured: list[Exchange] = []  # this call's exchanges, for the result's wire fold
        # the call as the server answered it, for the turn recorder's cassette: references to what the call
        # made anyway (the JSON-RPC result the agent's result is built from), nothing copied or encoded here
        answer: dict = {"tool": remote, "arguments": args, "result": None, "error": None}
        token = CAPTURE.set(captured)
        try:
            limit = ctx.extra.get("result_limit", RESULT_LIMIT)
            spill = Spill(ctx.agent_dir, limit, name)
            result = await client.call(remote, args, spill)
            if SPILLED in result:
                answer["notRecorded"] = f"too big: the answer was over {spill.threshold:,} bytes (kept on disk)"
            else:
                answer["result"] = result
            return tool_result(remote, result)
        except McpTimeout as exc:
            answer["error"] = exc.rpc_error()
            raise ToolError(f"MCP server '{client.server.name}': {exc}", hint=McpTimeout.HINT) from None
        except McpError as exc:
            answer["error"] = exc.rpc_error()
            raise ToolError(f"MCP server '{client.server.name}': {exc}") from None
        finally:
            CAPTURE.reset(token)
            ctx.extra["inspect"] = {
                "mcp": {
                    "server": client.server.name,
                    "remote": remote,
                    "exchanges": captured,
                    "answer": answer,
                    "listing": client.listing,
                }
                | ({"outputSchema": output_schema} if output_schema is not None else {})
            }

    return Tool(
        name=name,
        description=description or f"{remote} (from MCP server '{client.server.name}')",
        params=RawObject(raw=schema),
        run=run,
        origin=f"mcp:{client.server.name} {client.revision}",  # which protocol era the server speaks
    )
