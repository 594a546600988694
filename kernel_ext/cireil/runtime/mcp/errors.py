"""Failures of the MCP transport; each message names what went wrong in words a person can act on."""

from __future__ import annotations

from typing import Any

from ..base.secrets import mask


class McpError(Exception):
    """A network or protocol failure: becomes a tool error on a call, a config issue at load."""

    def __init__(self, message: object = "", *args: object) -> None:
        # it names the URL (its credentials) and quotes the server, which may echo a header of mcp.toml: masked
        # before it reaches a result, a session or a view (base/secrets.py)
        super().__init__(mask(str(message)), *args)

    # JSON-RPC codes for a call that got no JSON-RPC answer (the mcp SDK's CONNECTION_CLOSED, REQUEST_TIMEOUT)
    FAILURE, FAILURE_KIND = -32000, "transport"

    def rpc_error(self) -> dict[str, Any]:
        """The failure as a JSON-RPC error object, for a recorded MCP call (the turn recorder's cassette):
        `data.failure` says it was not the server's answer ("transport", "timeout" or "http")."""
        return {"code": self.FAILURE, "message": str(self), "data": {"failure": self.FAILURE_KIND, "status": None}}


class McpTimeout(McpError):
    """The deadline passed. Unlike a refusal this proves nothing: the server may have done the work."""

    HINT = (
        "A timeout does not prove the call had no effect: the server may have carried it out. "
        "Check the remote state before calling again."
    )
    FAILURE, FAILURE_KIND = -32001, "timeout"


class McpRemoteError(McpError):
    """The server answered with a JSON-RPC error."""

    def __init__(self, code: object, message: str, data: Any = None) -> None:
        super().__init__(f"server error {code}: {message}")
        self.code = code
        self.data = data
        self.remote_message = mask(message)  # as the server worded it (masked like the whole)

    def rpc_error(self) -> dict[str, Any]:
        """The server's JSON-RPC error as it sent it (message masked)."""
        code = self.code if isinstance(self.code, int) and not isinstance(self.code, bool) else self.FAILURE
        return {"code": code, "message": self.remote_message, "data": self.data}


class McpHttpError(McpError):
    """The server refused a POST at the HTTP level; `code`/`data` are from the JSON-RPC error its body may carry.

    Kept apart from other failures because the connect-time probe decides the protocol era from them.
    """

    def __init__(self, message: str, status: int, code: object = None, data: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.data = data

    def rpc_error(self) -> dict[str, Any]:
        code = self.code if isinstance(self.code, int) and not isinstance(self.code, bool) else self.FAILURE
        data = {"failure": "http", "status": self.status} | ({"data": self.data} if self.data is not None else {})
        return {"code": code, "message": str(self), "data": data}
