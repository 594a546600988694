"""What the conversation tools share: reaching the store, channel support, and how messages read as text."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from ..base.errors import ToolError

if TYPE_CHECKING:
    from ..sessions.store import SessionStore
    from .tool import ToolContext

THINKING_LIMIT = 200
TRUNCATED = "… (truncated)"


def store_of(ctx: ToolContext, tool: str) -> SessionStore:
    if ctx.conversation is None or ctx.conversation.store is None:
        raise ToolError(
            f"{tool} needs a session store, and this call has none.",
            hint="Run it through an agent that keeps sessions (its sessions.db).",
        )
    return ctx.conversation.store


def require_channel(ctx: ToolContext, message: str) -> None:
    """Internal sessions (cron:, internal:) have no channel behind them; the notebook channel has everything."""
    if ctx.session.platform == "internal":
        raise ToolError(message)


def absolute_time(value: str | None) -> str | None:
    """ISO-8601 -> `YYYY-MM-DD HH:MM:SS ±HH:MM`, in the offset it was written with; unparseable stays as it is."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()
    offset = parsed.strftime("%z")
    return parsed.strftime("%Y-%m-%d %H:%M:%S ") + f"{offset[:3]}:{offset[3:]}"


def _thinking(text: str) -> str:
    if len(text) > THINKING_LIMIT:
        return f"[thinking: {text[:THINKING_LIMIT]}{TRUNCATED}]"
    return f"[thinking: {text}]"


def message_text(message: dict) -> str:
    """read-session's rendering of one message's parts (reference §4.14), empty parts dropped."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content or ():
        kind = part.get("type")
        if kind == "text":
            piece = part.get("text") or ""
        elif kind == "toolCall":
            tool_input = part.get("input") or {}
            if part.get("name") == "respond" and isinstance(tool_input.get("content"), str):
                piece = tool_input["content"]
            else:
                piece = f"[toolCall: {part.get('name')} {json.dumps(tool_input, ensure_ascii=False)}]"
        elif kind == "thinking":
            piece = _thinking(part.get("thinking") or "")
        elif kind == "redactedThinking":
            piece = "[redacted_thinking]"
        elif kind in ("image", "video", "image_ref", "video_ref"):  # a ref whose file is gone is still a picture
            piece = f"[{kind.removesuffix('_ref')}]"
        else:
            piece = ""
        if piece:
            pieces.append(piece)
    return "\n".join(pieces)


def conversation_messages(history: list[dict]) -> list[dict]:
    """The user and assistant messages of a history that are kept (not turn-only context)."""
    return [m for m in history if m.get("role") in ("user", "assistant") and m.get("persistent", True) is not False]
