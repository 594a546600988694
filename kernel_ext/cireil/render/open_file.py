"""open-file: the file's pinned state at a glance, with buttons to unpin sections or go back to the outline."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import Action
from .html import FG_DIM, OK, code, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult

UNPIN_LIMIT = 12


def pinned_state(data: dict) -> tuple[str, str]:
    """(text, html) of what is pinned for this file: whole, some sections, or sections just unpinned."""
    sections = data.get("activeSections")
    if sections is None:
        return "pinned: the whole file", "the whole file"
    if not sections:
        return "pinned: no sections (the file renders whole if it is still open)", "no sections"
    chips = " ".join(code(s, f"border:1px solid {OK};border-radius:3px;padding:0 4px") for s in sections)
    return f"pinned sections: {', '.join(sections)}", chips


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    path = data.get("path", "")
    state_text, state_html = pinned_state(data)
    lines = [f"{path}  {state_text}"]
    body = f'<div><span style="color:{OK}">📌</span> {state_html}</div>'
    if "open" in data:
        lines.append(f"open files: {', '.join(data['open']) or 'none'}")
        opened = ", ".join(f"{code(p)}" for p in data["open"])
        body += f'<div style="color:{FG_DIM};font-size:90%">open files: {opened or "none"}</div>'
    title = f"{code(path)}"
    return "\n".join(lines), frame(result.tool, body, title=title)


def actions(result: ToolResult) -> list[Action]:
    path = result.data.get("path", "")
    offered = [
        Action(
            label=f"unpin {s}",
            tool="open-file",
            args={"path": path, "closeSections": [s]},
            tooltip=f"remove section {s} from the context",
        )
        for s in (result.data.get("activeSections") or [])[:UNPIN_LIMIT]
    ]
    offered.append(Action(label="outline", tool="read", args={"path": path}, tooltip="read the file again"))
    return offered
