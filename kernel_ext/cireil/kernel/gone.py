"""Widgets that say so when the kernel they belonged to is gone (restarted, or shut down).

After a restart JupyterLab keeps drawing the old widget views, but their models lost their kernel:
a click goes nowhere (the browser logs "Cannot send"). The widget manager marks every such view with
the class `jupyter-widgets-disconnected`; without scripts of our own, a scoped style rule is how the
view can react. Every selector starts at the `cireil-live` class this module puts on our own widget,
so nothing else on the page is touched.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from ..render.html import WARN

LIVE_CLASS = "cireil-live"
_GONE = f".{LIVE_CLASS}.jupyter-widgets-disconnected"
_STYLE = (
    "<style>"
    f".{LIVE_CLASS} > .cireil-gone {{display:none}}"
    f"{_GONE} > .cireil-gone {{display:block}}"
    f".{LIVE_CLASS} .{LIVE_CLASS} > .cireil-gone {{display:none}}"  # one note, on the outermost widget
    f"{_GONE} button, {_GONE} input, {_GONE} select, {_GONE} textarea"
    "{pointer-events:none;opacity:0.45}"
    "</style>"
)
NOTE = (
    "⚠ The kernel this belonged to was restarted or stopped: these buttons no longer do anything. Run the cell again."
)


def mark(widget: Any) -> Any:
    """Give `widget` (a Box) the note and rule that show once its kernel is gone; returns it."""
    note = W.HTML(f'{_STYLE}<div style="color:{WARN};margin:2px 0">{NOTE}</div>')
    note.add_class("cireil-gone")
    widget.add_class(LIVE_CLASS)
    widget.children = (*widget.children, note)
    return widget
