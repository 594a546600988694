"""write: one line saying which file now holds the content."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import OK, code, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    path = result.data.get("path", "")
    written = len(result.args.get("content", "").encode("utf-8"))
    text = f"wrote {path} (content: {written} bytes)"
    body = f'<span style="color:{OK}">✓</span> wrote {code(path)} (content: {written} bytes)'
    return text, frame("write", body)
