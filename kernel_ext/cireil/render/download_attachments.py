"""download-attachments: the files that were saved."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, OK, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    saved = result.data.get("saved", [])
    summary = f"saved {len(saved)} attachment{'' if len(saved) == 1 else 's'}"
    text = "\n".join([summary, *(f"  {p}" for p in saved)])
    items = "".join(f"<li>{code(p)}</li>" for p in saved)
    body = f'<ul style="margin:2px 0">{items}</ul>' if saved else f'<div style="color:{FG_DIM}">(no attachments)</div>'
    return text, frame("download-attachments", body, title=f'<span style="color:{OK}">✓</span> {esc(summary)}')
