"""A result with follow-up actions, shown as a widget: the rendered result and a button per action.

Pressing a button runs the action's tool call on the runtime thread and replaces the view with the
new result (which may offer actions of its own), so an edit preview becomes the applied edit in
place. An action marked `below` (exec's "open stdout") opens its result in a fold under the view
instead, which stays. A dismiss action (Discard) calls nothing and leaves the view saying so.
Imported only when a result has actions (see extension.py), so plain results never load ipywidgets.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from ...render import Action, dismissed_bundle, result_actions, result_bundle
from ...render.html import FRAME_INSET_PX
from ..gone import mark
from ..outputs import display_output

if TYPE_CHECKING:
    from ...runtime.base.loop import Submitted
    from ...runtime.toolkit.result import ToolResult

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class ResultView(W.VBox):
    def __init__(self, result: ToolResult) -> None:
        self.output = W.Output()
        self.buttons = W.HBox([], layout=W.Layout(flex_flow="row wrap"))
        self.status = W.HTML("")
        # the widget parts start where the text of the rendered view does, inside its coloured border
        inset = W.Layout(margin=f"0 0 0 {FRAME_INSET_PX}px")
        self.below = W.VBox([], layout=inset)  # results of `below` actions, one fold each
        self._folds: dict[tuple[str, str], W.Accordion] = {}  # (label, tool) -> its fold
        self.extra = W.VBox([], layout=inset)  # a view drawn as widgets under the output (an outline's tree)
        super().__init__([self.output, self.extra, W.HBox([self.buttons, self.status], layout=inset), self.below])
        mark(self)  # says so once the kernel is restarted
        self.show(result)

    def show(self, result: ToolResult) -> None:
        self.result = result
        if result.tool == "read" and result.success and "outline" in result.data:
            # the tree is drawn as widgets, with an open action on every section row
            from ...render.read import open_action, outline_header
            from .outline_tree import OutlineTree

            path = result.data.get("path", "")
            self.tree = OutlineTree(result.data["outline"], lambda section: self.run(open_action(path, section)))
            self.output.outputs = (display_output(outline_header(result)),)
            self.buttons.children = []
            self.extra.children = [self.tree]
            return
        self.extra.children = []
        self.output.outputs = (display_output(result_bundle(result)),)
        self.buttons.children = [self._button(a) for a in result_actions(result)]

    def _button(self, action: Action) -> W.Button:
        # Sized to the label and never shrunk: the default fixed width cut "open <section>" down to "open …"
        # (seen in tests/browser); the row wraps instead.
        button = W.Button(
            description=action.label,
            button_style=action.style,
            tooltip=action.tooltip,
            layout=W.Layout(width="auto", flex="0 0 auto"),
        )
        button.on_click(lambda _b: self.run(action))
        return button

    def _controls(self) -> list[W.Button]:
        tree = self.extra.children[0] if self.extra.children else None
        return [*self.buttons.children, *(tree.open_buttons if tree is not None else [])]

    def _ready(self, message: str = "") -> None:
        self.status.value = message
        for button in self._controls():
            button.disabled = False

    def run(self, action: Action) -> None:
        if not action.tool:  # a dismiss action (Discard): no call, the offers go away
            self.buttons.children = []
            shown = dismissed_bundle(self.result)
            if shown is not None:  # the view itself says so (a discarded preview no longer looks pending)
                self.output.outputs = (display_output(shown),)
                self.status.value = ""
            else:
                self.status.value = f"{html.escape(action.label)}: dismissed, nothing was run"
            return
        if action.below and (action.label, action.tool) in self._folds:  # opened before: unfold, no second call
            self._folds[action.label, action.tool].selected_index = 0
            return
        for button in self._controls():
            button.disabled = True
        self.status.value = f"running {html.escape(action.tool)}…"
        try:
            submitted = self.result.agent.submit(action.tool, action.args)
        except Exception as exc:  # config broken or tool disabled since: say so, keep the view usable
            self._ready(f"✖ {html.escape(str(exc))}")
            return
        submitted.add_done_callback(lambda done: self._done(done, action))

    def _done(self, submitted: Submitted, action: Action) -> None:
        try:
            new = submitted.result()
        except BaseException as exc:  # cancelled or crashed: the old view stays usable
            self._ready(f"✖ {html.escape(str(exc) or type(exc).__name__)}")
            return
        if action.below:
            self._ready()
            self._open_below(action, new)
            return
        self.status.value = ""
        self.show(new)

    def _open_below(self, action: Action, result: ToolResult) -> None:
        out = W.Output()
        out.outputs = (display_output(interactive_bundle(result)),)
        fold = W.Accordion(children=[out], titles=(action.tooltip or action.label,), selected_index=0)
        self._folds[action.label, action.tool] = fold
        self.below.children = (*self.below.children, fold)


def interactive_view(result: ToolResult) -> dict[str, Any]:
    """The widget-view MIME entry for a result that has actions."""
    bundle = ResultView(result)._repr_mimebundle_()
    return {WIDGET_MIME: bundle[WIDGET_MIME]}


def interactive_bundle(result: ToolResult) -> dict[str, Any]:
    """A result's bundle, with its widget view when its tool offers actions (text and HTML stay as fallbacks:
    one display either way)."""
    bundle = result_bundle(result)
    if result.agent is not None and result_actions(result):
        bundle = {**bundle, **interactive_view(result)}
    return bundle
