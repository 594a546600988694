"""read: an outline tree with open buttons, numbered and highlighted text, or the picture/video itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import Action
from . import outline as outline_view
from .html import FG_DIM, MONO, esc, frame
from .media import media_html
from .source import content_view, plain_numbered

if TYPE_CHECKING:
    from ..runtime.result import ToolResult


def _title(path: str, detail: str) -> str:
    return f'<code style="font-family:{MONO}">{esc(path)}</code> <span style="color:{FG_DIM}">· {esc(detail)}</span>'


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    path = data.get("path", "")
    if "outline" in data:
        outline = data["outline"]
        count = len(outline.get("sections", []))
        hint = (
            f'<div style="color:{FG_DIM};font-size:90%;margin-top:4px">Outline instead of content: the file is '
            f"~{outline.get('estTokens')} tokens. Pin sections with open-file (the buttons pin the outer ones), "
            "or read with raw=true for the full text.</div>"
        )
        title = _title(path, f"outline · {count} sections · {outline.get('lines')} lines · {data.get('size')} bytes")
        return outline_view.text(outline), frame("read", outline_view.html(outline) + hint, title=title)
    if "type" in data and "mediaType" in data:
        text = f"{path}: {data['type']} ({data['mediaType']}, {data.get('size')} bytes), attached for the agent"
        title = _title(path, f"{data['type']} · {data['mediaType']} · {data.get('size')} bytes")
        return text, frame("read", media_html(result), title=title)
    content = data.get("content", "")
    text = f"{path} ({data.get('size')} bytes)\n{plain_numbered(content)}"
    title = _title(path, f"{data.get('size')} bytes")
    return text, frame("read", content_view(content, path), title=title)


def actions(result: ToolResult) -> list[Action]:
    outline = result.data.get("outline")
    if not outline or result.data.get("success") is False:
        return []
    path = result.data.get("path", "")
    return [
        Action(
            label=f"open {_short(s['label'] or s['id'])}",
            tool="open-file",
            args={"path": path, "sections": [s["id"]]},
            tooltip=f"pin section {s['id']} (lines {outline_view.line_range(s)}) with open-file",
        )
        for s in outline_view.openable(outline)
    ]


def _short(label: str, limit: int = 28) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"
