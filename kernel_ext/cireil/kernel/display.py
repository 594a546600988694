"""How cireil's objects show themselves in IPython: printers registered with the shell's formatters by type
name, so the runtime never imports render/ (nor loads its own module to be shown).

The printers go on the MIME-bundle formatter: one call gives every type of the bundle (text/plain always,
scoped text/html, the raw result under RESULT_MIME), and IPython then skips its own text/plain repr for it,
so nothing renders twice. Where the extension is loaded, a result that offers actions (apply an edit, pin a
section) also carries its widget view, and is still one display with its text and HTML as fallbacks.
Outside IPython the objects keep their plain repr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..runtime.engine.opened_files import OpenedFilesContext
    from ..runtime.toolkit.result import ToolResult

RESULT = "cireil.runtime.toolkit.result.ToolResult"
CONTEXT = "cireil.runtime.engine.opened_files.OpenedFilesContext"

_WITH_WIDGETS: set[int] = set()  # id() of the shells where the extension is loaded


def result_mimebundle(result: ToolResult, *, widgets: bool = False) -> dict[str, Any]:
    """A result's bundle; with `widgets`, a result whose tool offers actions adds its widget view."""
    from ..render import result_actions, result_bundle

    if widgets and result.agent is not None and result_actions(result):
        from .views.result import interactive_bundle  # ipywidgets loads only here

        return interactive_bundle(result)
    return result_bundle(result)


def context_mimebundle(ctx: OpenedFilesContext) -> dict[str, Any]:
    from ..render.opened_files import context_bundle

    return context_bundle(ctx)


def replay_mimebundle(replay: Any) -> dict[str, Any]:
    from ..render.replay import ReplayView

    return ReplayView(replay)._repr_mimebundle_()


# runtime type (by name: registering imports nothing) -> its MIME bundle; a new runtime object that needs a
# view adds its line here, and its view goes in render/
PRINTERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    CONTEXT: context_mimebundle,
    "cireil.runtime.recorder.replay.ReplayResult": replay_mimebundle,
}


def register(shell: Any, *, widgets: bool = False) -> None:
    """Show cireil's objects rich in `shell`; `widgets`: as the loaded extension does, with action buttons.
    Calling it again replaces the printers (never stacks them)."""
    key = id(shell)
    if widgets:
        _WITH_WIDGETS.add(key)
    formatter = shell.display_formatter.mimebundle_formatter
    printers = {**PRINTERS, RESULT: lambda result: result_mimebundle(result, widgets=key in _WITH_WIDGETS)}
    for name, printer in printers.items():
        formatter.pop(name, None)  # a printer already moved from the by-name table would win over a new one
        formatter.for_type_by_name(*name.rsplit(".", 1), printer)


def without_widgets(shell: Any) -> None:
    """The extension was unloaded: results still render, without widget views."""
    _WITH_WIDGETS.discard(id(shell))


def register_running_shell() -> None:
    """Show cireil's objects rich in the running IPython, if any (the Python API in a notebook without
    `%load_ext cireil`, as contracts.md promises); nothing happens in plain Python."""
    if "IPython" not in sys.modules:  # no shell can be running: keep plain Python free of IPython
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None and hasattr(shell, "display_formatter"):
        register(shell)
