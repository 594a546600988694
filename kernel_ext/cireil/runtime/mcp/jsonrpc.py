"""JSON-RPC 2.0 messages as MCP uses them: building them, and telling one kind from another."""

from __future__ import annotations

import json
import re
from typing import Any

from ..base.jsonbound import MAX_DEPTH, TooDeep, too_deep
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
    except TooDeep as exc:
        value = _listing_without_deep_tools(text)  # one tool's deep schema must not cost the server its others
        if value is None:
            raise McpError(f"server sent invalid JSON ({exc}): {text[:200]!r}") from None
    except ValueError as exc:
        raise McpError(f"server sent invalid JSON ({exc}): {text[:200]!r}") from None
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(item, dict) for item in items):
        raise McpError(f"server sent something that is not a JSON-RPC message: {text[:200]!r}")
    return items


TOO_DEEP_MARK = "x-cireil-too-deep"  # stands in a listing for a tool whose definition nests too deeply
_TOKEN = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}:,]')


def _listing_without_deep_tools(text: str) -> dict | None:
    """A tools/list response whose too-deep tools are each replaced by {name, TOO_DEEP_MARK}, or None when the
    depth is anywhere else (or the text is not such a response). One linear scan of the tokens: the entries
    of the array at {…{…[ are cut out where they nest past MAX_DEPTH, then the rest is parsed as usual."""
    stack: list[str] = []
    entry_start = -1  # where the current entry of a {{[ array begins
    entry_depth = 0  # the deepest it goes
    entry_name: str | None = None
    expect_name = 0  # 1 after the key "name" at an entry's own level, 2 after its colon
    cuts: list[tuple[int, int, str | None]] = []
    for token in _TOKEN.finditer(text):
        kind = token.group()
        level = len(stack)
        if level == 4 and entry_start >= 0 and stack[-1] == "{":
            if kind == '"name"' and expect_name == 0:
                expect_name = 1
            elif kind == ":" and expect_name == 1:
                expect_name = 2
            elif expect_name == 2 and kind.startswith('"'):
                entry_name, expect_name = kind, 0
            elif kind not in ",":
                expect_name = 0
        if kind in "[{":
            if level == 3 and stack == ["{", "{", "["]:
                entry_start, entry_depth, entry_name, expect_name = token.start(), 0, None, 0
            stack.append(kind)
            entry_depth = max(entry_depth, len(stack))
        elif kind in "]}":
            if not stack:
                return None
            stack.pop()
            if len(stack) == 3 and entry_start >= 0:
                if entry_depth > MAX_DEPTH:
                    if text[entry_start] != "{":
                        return None  # not a tool at all: the listing itself is broken
                    cuts.append((entry_start, token.end(), entry_name))
                entry_start = -1
    if not cuts:
        return None
    parts, last = [], 0
    for start, end, name in cuts:
        parts += [text[last:start], f'{{"name":{name or "null"},"{TOO_DEEP_MARK}":true}}']
        last = end
    parts.append(text[last:])
    try:
        value = json.loads("".join(parts))
    except (ValueError, RecursionError):
        return None
    result = value.get("result") if isinstance(value, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    marked = sum(1 for t in tools if isinstance(t, dict) and TOO_DEEP_MARK in t) if isinstance(tools, list) else 0
    if marked != len(cuts) or too_deep(value, MAX_DEPTH):
        return None  # the depth was not (only) in the tools of a listing
    return value


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
