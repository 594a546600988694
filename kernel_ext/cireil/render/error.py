"""A failed result: the error, its hint, and each parameter issue, clearly marked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import ERROR, ERROR_BG, FG_DIM, code_block, esc, frame, json_text

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult

_SHOWN = {"error", "hint", "issues", "success"}


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    error = str(data.get("error", "the tool reported failure"))
    lines = [f"{result.tool} failed: {error}"]
    body = f'<div style="background:{ERROR_BG};color:{ERROR};padding:4px 8px;white-space:pre-wrap">✖ {esc(error)}</div>'
    issues = data.get("issues") or []
    if len(issues) > 1:
        items = []
        for issue in issues:
            where = issue.get("path") or ""
            message = issue.get("message", "")
            lines.append(f"  - {where + ': ' if where else ''}{message}")
            items.append(f"<li><code>{esc(where)}</code> {esc(message)}</li>" if where else f"<li>{esc(message)}</li>")
        body += f'<ul style="margin:4px 0">{"".join(items)}</ul>'
    if data.get("hint"):
        lines.append(f"hint: {data['hint']}")
        body += f'<div style="color:{FG_DIM};margin-top:4px">💡 {esc(data["hint"])}</div>'
    rest = {k: v for k, v in data.items() if k not in _SHOWN}
    if rest:
        lines.append(json_text(rest))
        body += code_block(json_text(rest))
    return "\n".join(lines), frame(result.tool, body, title=f"{esc(result.tool)} failed", failed=True)
