"""Pictures and videos read by the agent, shown inline from the bytes queued for its next model call."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from .html import FG_DIM, esc

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult

INLINE_LIMIT = 20 * 1024 * 1024  # bytes; above this a data URI would make the notebook unwieldy


def _queued(result: ToolResult) -> tuple[bytes | None, str]:
    """The bytes the read queued and their media type (WebP for a HEIC, say: what the model gets);
    found on the session of the agent that ran it, newest first."""
    session = getattr(result.agent, "session", None)
    for item in reversed(getattr(session, "pending_media", []) or []):
        if item.get("path") == result.data.get("path") and item.get("type") == result.data.get("type"):
            return item.get("data"), item.get("mediaType") or result.data["mediaType"]
    return None, result.data["mediaType"]


def media_html(result: ToolResult) -> str:
    data, media_type = _queued(result)
    if data is None:
        return f'<div style="color:{FG_DIM}">(the media is no longer queued, so it cannot be shown here)</div>'
    if len(data) > INLINE_LIMIT:
        return f'<div style="color:{FG_DIM}">({len(data)} bytes: too large to show inline)</div>'
    uri = f"data:{esc(media_type)};base64,{base64.b64encode(data).decode('ascii')}"
    label = esc(result.data.get("path", ""))
    if result.data.get("type") == "video":
        return f'<video controls src="{uri}" style="max-width:100%;max-height:30em" title="{label}"></video>'
    return f'<img src="{uri}" alt="{label}" style="max-width:100%;max-height:30em">'
