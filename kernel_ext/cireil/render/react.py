"""react: one line, the emoji and the message it went on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, OK, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    emoji = result.args.get("emoji", "")
    target = result.args.get("message_id") or "the triggering message"
    text = f"reacted {emoji} on {target}"
    body = (
        f'<span style="color:{OK}">✓</span> reacted {esc(emoji)} <span style="color:{FG_DIM}">on</span> {code(target)}'
    )
    return text, frame("react", body)
