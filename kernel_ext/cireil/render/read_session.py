"""read-session as a transcript: role, time, text per message."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .chat import images_html
from .html import BORDER, FG_DIM, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult

ROLE_ICON = {"user": "👤", "assistant": "🤖"}


def _pictures(result: ToolResult) -> dict[str, list[dict]]:
    """Image parts of the listed messages by id (stored image_refs come with their bytes), for inline display."""
    agent = getattr(result, "agent", None)
    session_id = result.data.get("id")
    try:
        live = getattr(agent, "session", None)
        if live is not None and live.id == session_id:
            session = live
        else:
            store = getattr(agent, "store", None)
            session = store.get(session_id) if store is not None else None
    except Exception:  # the view shows the text it has; the tool already reported any problem
        return {}
    if session is None:
        return {}
    out: dict[str, list[dict]] = {}
    for message in session.history:
        parts = message.get("content")
        if isinstance(parts, list) and any(p.get("type") == "image" for p in parts):
            out[str(message.get("id"))] = parts
    return out


def render(result: ToolResult) -> tuple[str, str]:
    session_id = result.data.get("id", "")
    messages = result.data.get("messages", [])
    total = result.data.get("totalMessages", len(messages))
    summary = f"{len(messages)} of {total} message{'' if total == 1 else 's'}"
    lines = [f"session {session_id}  ({summary})"]
    pictures = _pictures(result) if any("[image]" in str(m.get("content", "")) for m in messages) else {}
    for m in messages:
        lines.append(f"[{m.get('timestamp', '')}] {m.get('role', '')}:")
        lines += ["  " + line for line in str(m.get("content", "")).splitlines() or [""]]
    items = (
        "".join(
            f'<div style="border-top:1px solid {BORDER};padding:3px 0">'
            f'<div style="color:{FG_DIM};font-size:90%">{ROLE_ICON.get(m.get("role"), "")} {esc(m.get("role", ""))}'
            f" · {esc(m.get('timestamp', ''))}</div>"
            f'<div style="white-space:pre-wrap;overflow-wrap:anywhere">{esc(m.get("content", ""))}</div>'
            f"{images_html(pictures.get(str(m.get('id')), ()))}</div>"
            for m in messages
        )
        or f'<div style="color:{FG_DIM}">(no messages)</div>'
    )
    title = f'🗂 {code(session_id)} <span style="color:{FG_DIM}">· {esc(summary)}</span>'
    return "\n".join(lines), frame("read-session", items, title=title)
