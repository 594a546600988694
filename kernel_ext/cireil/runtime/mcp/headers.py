"""The 2026-07-28 routing headers: values safe for HTTP, and the `Mcp-Param-*` headers tools ask for.

A tool may mark an argument with `x-mcp-header: X`; every call must then mirror that argument's value
in `Mcp-Param-X`, and a tool whose marks are invalid must not be offered (the server would refuse its
calls, or worse, route them on a header we cannot produce).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

MARK = "x-mcp-header"
PARAM_PREFIX = "Mcp-Param-"
_PLAIN = re.compile(r"[\x20-\x7e]*")
_WRAPPED = re.compile(r"=\?base64\?.*\?=")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 field-name characters
_TYPES = ("string", "integer", "boolean")  # "number" is excluded: float text differs between languages
# JSON Schema keywords whose values are schemas; crossing one leaves the plain `properties` path
_ONE = ("items", "contains", "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties")
_ONE += ("not", "if", "then", "else", "contentSchema")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_BY_NAME = ("patternProperties", "dependentSchemas", "$defs", "definitions")

Path = tuple[str, ...]


def header_value(value: str) -> str:
    """Printable ASCII without edge spaces goes as is; anything else in the spec's base64 wrapping."""
    if _PLAIN.fullmatch(value) and value == value.strip() and not _WRAPPED.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode('ascii')}?="


def param_marks(schema: Any) -> dict[Path, str]:
    """The argument paths a tool's inputSchema marks, with their header names; ValueError if a mark is invalid."""
    marks: dict[Path, str] = {}
    seen: dict[str, Path] = {}
    for path, node in _positions(schema):
        if MARK not in node:
            continue
        token = node[MARK]
        where = ".".join(path or ()) or "(the schema itself)"
        if not path:
            raise ValueError(f"{MARK} at {where} is not on a property reached through plain 'properties'")
        if not isinstance(token, str) or not _TOKEN.fullmatch(token):
            raise ValueError(f"{MARK} on property {where!r} is not a valid header name: {str(token)[:80]!r}")
        if node.get("type") not in _TYPES:
            raise ValueError(f"{MARK} on property {where!r} needs type string, integer or boolean")
        if token.lower() in seen:
            raise ValueError(f"{MARK} {token!r} is used twice ({'.'.join(seen[token.lower()])} and {where})")
        seen[token.lower()] = path
        marks[path] = token
    return marks


def param_headers(marks: dict[Path, str], arguments: dict) -> dict[str, str]:
    """`Mcp-Param-*` for the marked arguments present in this call (an absent or null one sends no header)."""
    headers: dict[str, str] = {}
    for path, token in marks.items():
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str | int | float):
            text = str(value)
        else:
            continue
        headers[PARAM_PREFIX + token] = header_value(text)
    return headers


def _positions(root: Any) -> Iterator[tuple[Path | None, dict]]:
    """Every schema inside `root`, with its path of property names, or None once off the plain path.

    Instance data (default, enum, const, examples) is never entered and $ref never followed, so a
    mark can only be found where the spec allows one to be written.
    """
    stack: list[tuple[Path | None, Any]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                stack += [((*path, name) if path is not None else None, sub) for name, sub in value.items()]
            elif key in _ONE:
                stack.append((None, value))
            elif key in _MANY and isinstance(value, list):
                stack += [(None, sub) for sub in value]
            elif key in _BY_NAME and isinstance(value, dict):
                stack += [(None, sub) for sub in value.values()]
