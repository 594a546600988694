"""An outline as a tree of widgets: every section row folds and has its own "open" action.

The HTML tree (render/outline.py) cannot call the kernel; this one can. Rows below the top level are
built when their parent is first unfolded, so a document with thousands of headings costs only what
is shown, and long runs of siblings come a page at a time.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as W

from ...render.outline import Node, line_range, row_html, tree

_TOGGLE = W.Layout(width="26px", height="24px", padding="0", flex="0 0 auto")
_OPEN = W.Layout(width="auto", height="22px", padding="0 8px", margin="0 0 0 8px", flex="0 0 auto")


PAGE = 40  # rows built per level at a time: a file with thousands of sibling headings stays light


class OutlineTree(W.VBox):
    """The sections of `outline`; `on_open(section)` runs when a row's open action is pressed."""

    def __init__(self, outline: dict, on_open: Callable[[dict], None]) -> None:
        self.on_open = on_open
        self.open_buttons: list[W.Button] = []
        super().__init__([])
        self._fill(self, tree(outline.get("sections", [])))

    def _fill(self, box: W.Box, nodes: list[Node], start: int = 0) -> None:
        """Rows for nodes[start:start + PAGE] appended to `box`, then a "more" button for the rest, if any."""
        rows = [self._node(n) for n in nodes[start : start + PAGE]]
        rest = len(nodes) - start - len(rows)
        if rest > 0:
            more = W.Button(description=f"{rest} more…", tooltip="show the next sections", layout=_OPEN)

            def page(_b: W.Button) -> None:
                box.children = tuple(c for c in box.children if c is not more)
                self._fill(box, nodes, start + PAGE)

            more.on_click(page)
            rows.append(more)
        box.children = (*box.children, *rows)

    def _node(self, node: Node) -> W.VBox:
        section = node.section
        label = W.HTML(row_html(section), layout=W.Layout(flex="0 1 auto"))
        open_button = W.Button(
            description="open",
            icon="thumb-tack",
            tooltip=f"pin section {section['id']} (lines {line_range(section)}) with open-file",
            layout=_OPEN,
        )
        open_button.on_click(lambda _b: self.on_open(section))
        self.open_buttons.append(open_button)
        if not node.children:
            spacer = W.Box(layout=_TOGGLE)
            return W.VBox([W.HBox([spacer, label, open_button], layout=W.Layout(align_items="center"))])
        unfolded = node.depth == 0  # the top level opens its children, as the HTML tree does
        children = W.VBox([], layout=W.Layout(margin="0 0 0 1.4em", display="flex" if unfolded else "none"))
        toggle = W.Button(
            icon="caret-down" if unfolded else "caret-right",
            tooltip=f"fold or unfold {section['label'] or section['id']}",
            layout=_TOGGLE,
        )
        if unfolded:
            self._fill(children, node.children)

        def flip(_b: W.Button) -> None:
            if not children.children:  # built on first unfold
                self._fill(children, node.children)
            shown = children.layout.display == "none"
            children.layout.display = "flex" if shown else "none"
            toggle.icon = "caret-down" if shown else "caret-right"

        toggle.on_click(flip)
        row = W.HBox([toggle, label, open_button], layout=W.Layout(align_items="center"))
        box = W.VBox([row, children])
        box.add_class("cireil-outline-node")
        return box
