"""JSON-RPC 2.0 messages as MCP uses them: building them, and telling one kind from another."""

from __future__ import annotations

import json
from typing import Any

from ..base.jsonbound import loads as bounded_loads
from .errors import McpError, McpRemoteError


def request(rid: int, method: str, params: dict | None, meta: str | None = None) -> bytes:
    """`meta` is an already encoded `params._meta` object (2026-07-28 sends the same one on every request)."""
    if meta is None or (params is not None and "_meta" in params):
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if meta is not None:
            params = {**params, "_meta": {**json.loads(meta), **params["_meta"]}}  # type: ignore[dict-item]
        if params is not None:
            body["params"] = params
        return json.dumps(body, separators=(",", ":")).encode()
    # spliced rather than re-encoded: the envelope is identical on every call
    inner = json.dumps(params, separators=(",", ":"))[1:-1] + "," if params else ""
    return f'{{"jsonrpc":"2.0","id":{rid},"method":{json.dumps(method)},"params":{{{inner}"_meta":{meta}}}}}'.encode()


def notification(method: str, params: dict | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    return json.dumps(body, separators=(",", ":")).encode()


def response(rid: Any, result: dict | None = None, error: dict | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result if result is not None else {}
    return json.dumps(body, separators=(",", ":")).encode()


def decode(text: str) -> list[dict]:
    """One message or (2025-03-26) a batch array; anything else is a protocol error."""
    try:
        value = bounded_loads(text)  # listings and results: a depth bomb is an error here, not a RecursionError later
    except ValueError as exc:
        raise McpError(f"server sent invalid JSON ({exc}): {text[:200]!r}") from None
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(item, dict) for item in items):
        raise McpError(f"server sent something that is not a JSON-RPC message: {text[:200]!r}")
    return items


def is_response(message: dict) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


def outcome(message: dict) -> dict:
    """The result of a response, or its error raised."""
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        raise McpRemoteError(error.get("code"), str(error.get("message", message["error"])), error.get("data"))
    result = message["result"]
    if not isinstance(result, dict):
        raise McpError(f"server sent a result that is not an object: {str(result)[:200]}")
    return result


def error_in_body(text: str) -> dict | None:
    """The JSON-RPC error object an HTTP error body may carry (its id is often null or odd: ignore it)."""
    try:
        value = bounded_loads(text)
    except ValueError:
        return None
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        return value["error"]
    return None
