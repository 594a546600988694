"""read-sections: which sections were added and what is pinned now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import open_file
from .html import FG_DIM, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    path = data.get("path", "")
    title = f"{code(path)}"
    if "activeSections" not in data:  # below the outline threshold: the message says it all
        message = data.get("message", "")
        return f"{path}  {message}", frame("read-sections", f"<div>{esc(message)}</div>", title=title)
    added = data.get("added", [])
    note = f"added: {', '.join(added)}" if added else data.get("message", "nothing added")
    state_text, state_html = open_file.pinned_state(data)
    body = f'<div style="color:{FG_DIM}">{esc(note)}</div><div>📌 {state_html}</div>'
    return f"{path}  {note}\n{state_text}", frame("read-sections", body, title=title)


actions = open_file.actions
