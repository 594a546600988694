"""Results of MCP tools: the server's content blocks as a person would want to see them.

Text as text, images inline, audio playable, resource links as links, embedded resources folded,
structuredContent as a collapsible JSON tree. The data itself is never changed; a block this view
does not know is shown as its JSON.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .html import (
    BG_SOFT,
    BORDER,
    DEEPER,
    ERROR,
    ERROR_BG,
    FG_DIM,
    MAX_DEPTH,
    MONO,
    code,
    code_block,
    esc,
    frame,
    json_text,
)

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult

SHOWS_FAILURES = True  # an isError result still has content blocks worth seeing
_MIME = re.compile(r"^[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+$")
_TREE_NODES = 2000  # a huge structuredContent is cut short rather than freezing the page
INLINE_LIMIT = 20 * 1024 * 1024


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    call = result.inspect.get("mcp") or {}
    if "content" not in data:  # a network or protocol failure: no blocks, just the error (and the wire)
        from .error import render as error_view

        text, html = error_view(result)
        return text, html + _wire(call)
    failed = not result.success
    texts: list[str] = []
    parts: list[str] = []
    if failed:
        error = str(data.get("error", "the tool reported an error"))
        texts.append(f"{result.tool} failed (isError): {error}")
        parts.append(
            f'<div style="background:{ERROR_BG};color:{ERROR};padding:2px 8px">✖ the server reported an error</div>'
        )
    for block in data.get("content") or []:
        text, html = _block(block)
        texts.append(text)
        parts.append(html)
    if "structuredContent" in data:
        texts.append("structuredContent: " + json_text(data["structuredContent"]))
        budget = [_TREE_NODES]
        tree = _tree(data["structuredContent"], budget)
        parts.append(
            f'<details open style="margin:4px 0"><summary style="color:{FG_DIM}">structuredContent</summary>'
            f'<div style="font-family:{MONO};padding-left:8px">{tree}</div></details>'
        )
    if not texts:
        texts.append("(no content)")
        parts.append(f'<div style="color:{FG_DIM}">(no content)</div>')
    if "outputSchema" in call:
        check_text, check_html = _output_check(call["outputSchema"], data, failed)
        if check_text:
            texts.append(check_text)
            parts.append(check_html)
    parts.append(_wire(call))
    title = f"{esc(result.tool)}{' failed' if failed else ''}"
    return "\n".join(texts), frame(result.tool, "".join(parts), title=title, failed=failed)


def _block(block: Any) -> tuple[str, str]:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text" and isinstance(block.get("text"), str):
        return block["text"], (
            f'<div style="white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0">{esc(block["text"])}</div>'
        )
    if kind in ("image", "audio"):
        return _media(block, kind)
    if kind == "resource_link":
        uri = str(block.get("uri", ""))
        label = str(block.get("title") or block.get("name") or uri)
        return f"link: {label} <{uri}>", f'<div style="margin:2px 0">🔗 {_link(uri, label)}{_mime_note(block)}</div>'
    if kind == "resource" and isinstance(block.get("resource"), dict):
        return _resource(block["resource"])
    text = json_text(block)
    return text, code_block(text)


def _media(block: dict, kind: str) -> tuple[str, str]:
    mime = str(block.get("mimeType", ""))
    raw = block.get("data")
    size = _decoded_size(raw)
    text = f"[{kind} {mime}, {size} bytes]" if size is not None else f"[{kind} {mime}: invalid base64 data]"
    if size is None or not _MIME.match(mime) or not mime.startswith(kind + "/") or size > INLINE_LIMIT:
        return text, f'<div style="color:{FG_DIM}">{esc(text)}</div>'
    uri = f"data:{mime};base64,{raw}"
    if kind == "image":
        return text, f'<img src="{esc(uri)}" alt="{esc(text)}" style="max-width:100%;max-height:30em;margin:2px 0">'
    return text, f'<audio controls src="{esc(uri)}" title="{esc(text)}"></audio>'


def _decoded_size(raw: Any) -> int | None:
    if not isinstance(raw, str):
        return None
    try:
        return len(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError):
        return None


def _resource(resource: dict) -> tuple[str, str]:
    uri = str(resource.get("uri", ""))
    if isinstance(resource.get("text"), str):
        content, text = code_block(resource["text"]), resource["text"]
    else:
        size = _decoded_size(resource.get("blob"))
        text = f"({size} bytes)" if size is not None else "(no readable content)"
        content = f'<div style="color:{FG_DIM}">{esc(text)}</div>'
    summary = f"📄 {esc(uri)}{_mime_note(resource)}"
    html = (
        f'<details style="margin:2px 0;border:1px solid {BORDER};padding:2px 6px">'
        f"<summary>{summary}</summary>{content}</details>"
    )
    return f"resource {uri}:\n{text}", html


def _link(uri: str, label: str) -> str:
    # Only web links become clickable: a javascript: or data: URI from a server must stay inert text
    if urlsplit(uri).scheme in ("http", "https"):
        return f'<a href="{esc(uri)}" target="_blank" rel="noopener noreferrer">{esc(label)}</a>'
    return f"{esc(label)} <code>{esc(uri)}</code>" if label != uri else f"<code>{esc(uri)}</code>"


def _mime_note(block: dict) -> str:
    mime = block.get("mimeType")
    return f' <span style="color:{FG_DIM}">({esc(mime)})</span>' if mime else ""


def _tree(value: Any, budget: list[int], depth: int = MAX_DEPTH) -> str:
    """A JSON value as nested <details>, objects and arrays folded, leaves as JSON literals.

    Bounded in nodes (`budget`) and in depth: past MAX_DEPTH levels a container is shown as "…".
    """
    budget[0] -= 1
    if budget[0] < 0 or (depth <= 0 and isinstance(value, dict | list)):
        return f'<span style="color:{FG_DIM}">{DEEPER}</span>'
    if isinstance(value, dict):
        items = [(esc(k), v) for k, v in value.items()]
        return _container("{", "}", items, budget, depth)
    if isinstance(value, list):
        return _container("[", "]", [(str(i), v) for i, v in enumerate(value)], budget, depth)
    return f'<span style="white-space:pre-wrap">{esc(json_text(value))}</span>'


def _container(open_: str, close: str, items: list[tuple[str, Any]], budget: list[int], depth: int) -> str:
    if not items:
        return esc(open_ + close)
    rows = "".join(
        f'<div style="padding-left:14px"><span style="color:{FG_DIM}">{key}</span>: {_tree(v, budget, depth - 1)}</div>'
        for key, v in items
    )
    count = f"{len(items)} item{'s' if len(items) != 1 else ''}"
    return (
        f'<details open style="display:inline-block;vertical-align:top"><summary style="background:{BG_SOFT}">'
        f"{esc(open_)} {count} {esc(close)}</summary>{rows}</details>"
    )


def _output_check(schema: Any, data: dict, failed: bool) -> tuple[str, str]:
    """structuredContent against the tool's declared outputSchema: for the person; the agent's result is as sent."""
    from ..runtime.mcp.outputcheck import check

    found = check(schema, data.get("structuredContent"), present="structuredContent" in data, is_error=failed)
    if not found:
        if failed:
            return "", ""
        return "outputSchema: structuredContent matches", (
            f'<div class="cireil-outputcheck" style="color:{FG_DIM};margin:2px 0">✓ structuredContent matches the '
            "tool's outputSchema</div>"
        )
    lines = [f"{v.path}: {v.message}" for v in found]
    items = "".join(f"<li>{code(v.path)} {esc(v.message)}</li>" for v in found)
    plural = "s" if len(found) != 1 else ""
    head = f"structuredContent does not match the tool's outputSchema ({len(found)} problem{plural})"
    html = (
        f'<div class="cireil-outputcheck" style="background:{ERROR_BG};color:{ERROR};padding:2px 8px;margin:4px 0">'
        f'⚠ {esc(head)}; the agent still gets the result as sent<ul style="margin:2px 0">{items}</ul></div>'
    )
    return head + ":\n  " + "\n  ".join(lines), html


def _wire(call: dict) -> str:
    if "exchanges" not in call:
        return ""
    from . import wire

    return wire.fold([e.as_dict() for e in call["exchanges"]])
