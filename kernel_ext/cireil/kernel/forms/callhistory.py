"""Saved calls in a tool form: the earlier calls of this tool (any surface, this kernel); one click refills the form.

The history itself is the agent's (runtime/toolkit/calllog.py, `agent.calls(tool)`); this is its picker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from ...render.html import FG_DIM, esc

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.toolkit.calllog import SavedCall


class CallHistoryPicker(W.VBox):
    """A list of earlier calls, newest first; selecting one calls `refill(arguments)`. Hidden while empty."""

    def __init__(self, agent: Agent, tool: str, refill: Callable[[dict], None]) -> None:
        self.agent = agent
        self.tool = tool
        self._refill = refill
        self.heading = W.HTML("")
        self.picker = W.Select(options=[], rows=4, layout=W.Layout(width="100%"))
        self.note = W.HTML("")
        self.entries: list[SavedCall] = []
        super().__init__([self.heading, self.picker, self.note])
        self.picker.observe(self._picked, "value")
        self.refresh()

    def refresh(self) -> None:
        """Reload from the agent (after a call ends, whoever made it)."""
        self.entries = self.agent.calls(self.tool)
        count = len(self.entries)
        self.heading.value = (
            f'<span style="color:{FG_DIM}">earlier calls ({count}, this kernel) · click one to refill the form</span>'
        )
        self.picker.unobserve(self._picked, "value")
        try:
            self.picker.options = [(entry.label(), i) for i, entry in enumerate(self.entries)]
            self.picker.value = None
        finally:
            self.picker.observe(self._picked, "value")
        self.picker.rows = max(1, min(5, count))
        self.layout.display = "" if count else "none"

    def pick(self, index: int) -> None:
        """What a click on entry `index` does (tests call it too)."""
        entry = self.entries[index]
        if entry.arguments is None:
            self.note.value = f'<span style="color:{FG_DIM}">{esc("arguments too large to keep: not refilled")}</span>'
            return
        self._refill(entry.arguments)
        self.note.value = f'<span style="color:{FG_DIM}">{esc(f"refilled from the call of {entry.when}")}</span>'

    def _picked(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self.pick(change["new"])
