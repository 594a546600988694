"""read: an outline tree with open buttons, numbered and highlighted text, or the picture/video itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import Action
from . import outline as outline_view
from .html import FG_DIM, code, esc, frame
from .media import media_html
from .source import content_view, plain_numbered

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def _title(path: str, detail: str) -> str:
    return f'{code(path)} <span style="color:{FG_DIM}">· {esc(detail)}</span>'


def _outline_frame(data: dict, tree_html: str, pin_hint: str) -> str:
    outline = data["outline"]
    count = len(outline.get("sections", []))
    hint = (
        f'<div style="color:{FG_DIM};font-size:90%;margin-top:4px">Outline instead of content: the file is '
        f"~{outline.get('estTokens')} tokens (estimate). Pin sections with open-file ({pin_hint}), "
        "or read with raw=true for the full text.</div>"
    )
    title = _title(
        data.get("path", ""), f"outline · {count} sections · {outline.get('lines')} lines · {data.get('size')} bytes"
    )
    return frame("read", tree_html + hint, title=title)


def outline_header(result: ToolResult) -> dict[str, Any]:
    """The outline's frame without the tree, for a view that draws the tree itself (kernel/views/outline_tree.py)."""
    from .safe import safe_bundle

    return safe_bundle(
        {
            "text/plain": outline_view.text(result.data["outline"]),
            "text/html": _outline_frame(result.data, "", "the open action on each row pins that section"),
        }
    )


def open_action(path: str, section: dict) -> Action:
    """Pin one section with open-file."""
    return Action(
        label=f"open {_short(section['label'] or section['id'])}",
        tool="open-file",
        args={"path": path, "sections": [section["id"]]},
        tooltip=f"pin section {section['id']} (lines {outline_view.line_range(section)}) with open-file",
    )


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    path = data.get("path", "")
    if "outline" in data:
        tree = outline_view.html(data["outline"])
        pin_hint = "where widgets run, each row can pin its section"
        return outline_view.text(data["outline"]), _outline_frame(data, tree, pin_hint)
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
    return [open_action(path, s) for s in outline_view.openable(outline)]


def _short(label: str, limit: int = 28) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"
