"""Tool result -> MIME bundle: text/plain always, scoped text/html, and application/json.

Renderers read the result dict and never change it. One module per tool that has its own view;
every other tool gets the generic view.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .html import code_block, esc, frame, json_text, notices_html

if TYPE_CHECKING:
    from ..runtime.result import ToolResult

# tool name -> module under cireil.render with `render(result) -> (text, html)`
_VIEWS = {
    "list-dir": "list_dir",
    "session-info": "session_info",
    "write": "write",
}


def _view(tool: str):
    module = _VIEWS.get(tool)
    if module is None:
        return None
    return importlib.import_module(f"{__name__}.{module}").render


def generic(result: ToolResult) -> tuple[str, str]:
    text = json_text(result.data)
    return text, frame(result.tool, code_block(text), title=esc(result.tool))


def result_bundle(result: ToolResult) -> dict[str, Any]:
    if not result.success:
        from .error import render as view
    else:
        view = _view(result.tool) or generic
    text, body = view(result)
    if result.notices:
        text = "\n".join(f"note: {n}" for n in result.notices) + "\n" + text
        body = notices_html(result.notices) + body
    return {"text/plain": text, "text/html": body, "application/json": result.data}
