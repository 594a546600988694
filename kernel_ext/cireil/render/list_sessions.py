"""list-sessions as a table: id, last activity, message count, preview."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import BORDER, FG_DIM, MONO, esc, frame

if TYPE_CHECKING:
    from ..runtime.result import ToolResult

_CELL = "padding:1px 8px;text-align:left;vertical-align:top"


def render(result: ToolResult) -> tuple[str, str]:
    sessions = result.data.get("sessions", [])
    count = f"{len(sessions)} session{'' if len(sessions) == 1 else 's'}"
    lines = [count]
    lines += [
        f"  {s.get('id')}  {s.get('lastActivity') or '-'}  {s.get('messageCount', 0)} msgs  {s.get('preview', '')}"
        for s in sessions
    ]
    rows = (
        "".join(
            f'<tr><td style="{_CELL};font-family:{MONO}">{esc(s.get("id", ""))}</td>'
            f'<td style="{_CELL};color:{FG_DIM}">{esc(s.get("lastActivity") or "-")}</td>'
            f'<td style="{_CELL};text-align:right">{esc(s.get("messageCount", 0))}</td>'
            f'<td style="{_CELL};overflow-wrap:anywhere">{esc(s.get("preview", ""))}</td></tr>'
            for s in sessions
        )
        or f'<tr><td colspan="4" style="{_CELL};color:{FG_DIM}">(no sessions)</td></tr>'
    )
    columns = ("id", "last activity", "messages", "preview")
    head = "".join(f'<th style="{_CELL};color:{FG_DIM}">{h}</th>' for h in columns)
    table = (
        f'<table style="border-collapse:collapse;border-top:1px solid {BORDER};margin-top:2px">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )
    return "\n".join(lines), frame("list-sessions", table, title=f"🗂 {esc(count)}")
