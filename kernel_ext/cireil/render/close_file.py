"""close-file: whether the file was open, and what stays open."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    path = data.get("path", "")
    verb = "closed" if data.get("removed") else "was not open:"
    remaining = ", ".join(data.get("open", [])) or "none"
    text = f"{verb} {path}\nopen files: {remaining}"
    body = f'{verb} {code(path)}<div style="color:{FG_DIM};font-size:90%">open files: {esc(remaining)}</div>'
    return text, frame("close-file", body)
