"""Sessions as a table: id, message count, last activity, preview. The list-sessions tool's result and
`%cireil sessions` (kernel/views.SessionList) draw the same rows with these two functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .html import FG_DIM, LINED, MONO, esc, frame, table

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def session_lines(sessions: Sequence[dict], current: str | None = None) -> list[str]:
    """One line per session (`*` marks `current`), its last message's preview indented below."""
    lines = []
    for s in sessions:
        mark = "*" if s.get("id") == current else " "
        lines.append(f"{mark} {s.get('id')}  {s.get('messageCount', 0)} messages  {s.get('lastActivity') or '-'}")
        if s.get("preview"):
            lines.append(f"    {s['preview']}")
    return lines


def session_table(sessions: Sequence[dict], current: str | None = None) -> str:
    def name(s: dict) -> tuple[str, str]:
        now = s.get("id") == current
        return (
            f"{esc(s.get('id', ''))}{' (current)' if now else ''}",
            f"font-family:{MONO};font-weight:{600 if now else 400}",
        )

    rows = [
        (
            name(s),
            (esc(s.get("messageCount", 0)), "text-align:right"),
            (esc(s.get("lastActivity") or "-"), f"color:{FG_DIM};white-space:nowrap"),
            (esc(s.get("preview") or ""), "overflow-wrap:anywhere"),
        )
        for s in sessions
    ]
    head = [(h, f"color:{FG_DIM}") for h in ("session", "messages", "last activity", "last message")]
    return table(rows, head=head, cell=LINED, style="border-collapse:collapse;margin-top:2px")


def render(result: ToolResult) -> tuple[str, str]:
    sessions = result.data.get("sessions", [])
    count = f"{len(sessions)} session{'' if len(sessions) == 1 else 's'}"
    body = session_table(sessions) if sessions else f'<span style="color:{FG_DIM}">(no sessions)</span>'
    note = result.data.get("note")  # the index is still being built: said, as the model is told
    if note:
        body = f'<div style="color:{FG_DIM}">{esc(note)}</div>' + body
    lines = [count, *([note] if note else []), *session_lines(sessions)]
    return "\n".join(lines), frame("list-sessions", body, title=f"🗂 {esc(count)}")
