"""read-history: the fetched messages as the agent reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, code, code_block, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    count = result.data.get("count", 0)
    direction = result.data.get("direction", result.args.get("direction", "before"))
    anchor = result.args.get("message_id", "")
    summary = f"{count} message{'' if count == 1 else 's'} {direction} {anchor}"
    messages = result.data.get("messages") or ""
    text = summary + ("\n" + messages if messages else "")
    body = code_block(messages) if messages else f'<div style="color:{FG_DIM}">(no messages)</div>'
    title = f'🕘 history <span style="color:{FG_DIM}">· {esc(count)} {esc(direction)}</span> ' + (f"{code(anchor)}")
    return text, frame("read-history", body, title=title)
