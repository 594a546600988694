"""list-dir as a table: type icon, name, type."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import BORDER, FG_DIM, MONO, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult

_ICONS = {"directory": "📁", "file": "📄", "symlink": "🔗"}
_SUFFIX = {"directory": "/", "symlink": "@", "file": ""}


def render(result: ToolResult) -> tuple[str, str]:
    path = result.data.get("path", "")
    entries = result.data.get("entries", [])
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    text_lines = [f"{path}  ({count})"]
    text_lines += [f"  {e['name']}{_SUFFIX.get(e['type'], '')}" for e in entries]
    if not entries:
        text_lines.append("  (empty)")
    rows = (
        "".join(
            f'<tr><td style="padding:1px 6px">{_ICONS.get(e["type"], "")}</td>'
            f'<td style="padding:1px 6px;font-family:{MONO};text-align:left">'
            f"{esc(e['name'])}{_SUFFIX.get(e['type'], '')}</td>"
            f'<td style="padding:1px 6px;color:{FG_DIM};text-align:left">{esc(e["type"])}</td></tr>'
            for e in entries
        )
        or f'<tr><td colspan="3" style="color:{FG_DIM};padding:1px 6px">(empty)</td></tr>'
    )
    table = (
        f'<table style="border-collapse:collapse;border-top:1px solid {BORDER};margin-top:2px">'
        f"<tbody>{rows}</tbody></table>"
    )
    title = f'{code(path)} <span style="color:{FG_DIM}">· {count}</span>'
    return "\n".join(text_lines), frame("list-dir", table, title=title)
