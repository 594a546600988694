"""Tool result -> MIME bundle: text/plain always, scoped text/html, and the raw data under RESULT_MIME.

Renderers read the result dict and never change it. One module per tool that has its own view;
every other tool gets the generic view. A view module may also offer `actions(result)`: follow-up
calls a person can make from the result (apply a previewed edit, pin a section). They are plain
data here; the kernel layer turns them into buttons when the result is shown in a notebook.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .html import code_block, esc, frame, json_text, notices_html
from .safe import safe_bundle

# The raw result dict travels under a vendor type, not application/json: JupyterLab ranks its JSON
# tree viewer above text/html, so with application/json in the bundle it showed the tree and never
# our view (seen in tests/browser). No front end renders this type; programs still read it.
RESULT_MIME = "application/vnd.cireil.result+json"

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


@dataclass(frozen=True)
class Action:
    """A follow-up tool call offered on a result, e.g. Apply on an edit preview."""

    label: str
    tool: str  # "" = dismiss: the buttons go away and nothing is called (Discard on an edit preview)
    args: dict[str, Any] = field(default_factory=dict)
    tooltip: str = ""
    style: str = ""  # "" | "primary" | "success" | "warning" | "danger"
    below: bool = False  # the new result opens under this one, which stays (exec's "open stdout")


View = Callable[["ToolResult"], tuple[str, str]]
Actions = Callable[["ToolResult"], list[Action]]

# Views registered at run time (tools defined in Python, plugins): tool name -> (render, actions)
_REGISTERED: dict[str, tuple[View, Actions | None]] = {}


def register_view(tool: str, render: View, actions: Actions | None = None) -> None:
    """Give a tool that is not built in its own view (and, optionally, actions)."""
    _REGISTERED[tool] = (render, actions)


def _module(tool: str) -> ModuleType | None:
    """The view module of a tool: a built-in's is named like its tool module (it may have none: the generic
    view); every MCP tool shares one, its local name made at discovery, its result shape the protocol's."""
    from ..runtime.toolkit import registry
    from ..runtime.toolkit.tool import python_name

    if tool.startswith("mcp__"):
        return importlib.import_module(f"{__name__}.mcp")
    if tool not in registry.BUILTIN_NAMES:
        return None
    name = f"{__name__}.{python_name(tool)}"
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def _view(tool: str) -> View | None:
    if tool in _REGISTERED:
        return _REGISTERED[tool][0]
    module = _module(tool)
    return module.render if module else None


def result_actions(result: ToolResult) -> list[Action]:
    """The follow-up calls offered on this result; none for most tools."""
    if tool_actions := _REGISTERED.get(result.tool, (None, None))[1]:
        return tool_actions(result)
    module = _module(result.tool)
    offer = getattr(module, "actions", None) if module else None
    return offer(result) if offer else []


def dismissed_bundle(result: ToolResult) -> dict[str, Any] | None:
    """How the result looks once its offer was dismissed (a discarded edit preview); None: unchanged."""
    module = _module(result.tool)
    view = getattr(module, "dismissed", None) if module else None
    if view is None:
        return None
    text, body = view(result)
    return safe_bundle({"text/plain": text, "text/html": body, RESULT_MIME: result.data})


def live_view(tool: str) -> Callable[..., dict[str, Any]] | None:
    """The live panel of a tool that reports output while it runs (exec's `live_bundle`); None for the others."""
    module = _module(tool)
    return getattr(module, "live_bundle", None) if module else None


def generic(result: ToolResult) -> tuple[str, str]:
    text = json_text(result.data)
    return text, frame(result.tool, code_block(text), title=esc(result.tool))


def result_bundle(result: ToolResult) -> dict[str, Any]:
    # A view module with SHOWS_FAILURES renders its tool's failures itself (exec: a non-zero exit still has output)
    if not result.success and not getattr(_module(result.tool), "SHOWS_FAILURES", False):
        from .error import render as view
    else:
        view = _view(result.tool) or generic
    text, body = view(result)
    if result.notices:
        text = "\n".join(f"note: {n}" for n in result.notices) + "\n" + text
        body = notices_html(result.notices) + body
    return safe_bundle({"text/plain": text, "text/html": body, RESULT_MIME: result.data})
