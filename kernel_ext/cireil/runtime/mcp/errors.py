"""Failures of the MCP transport; each message names what went wrong in words a person can act on."""

from __future__ import annotations


class McpError(Exception):
    """A network or protocol failure: becomes a tool error on a call, a config issue at load."""


class McpRemoteError(McpError):
    """The server answered with a JSON-RPC error."""

    def __init__(self, code: object, message: str) -> None:
        super().__init__(f"server error {code}: {message}")
        self.code = code
