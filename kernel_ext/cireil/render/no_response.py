"""no-response: one line saying what it does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    text = "no response: the turn ends without a message"
    return text, frame("no-response", f'<span style="color:{FG_DIM}">∅ {text}</span>')
