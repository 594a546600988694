"""session-info as a small card."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import frame, pairs

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    fields = {k: v for k, v in result.data.items() if k != "success"}
    text = "session\n" + "\n".join(f"  {k}: {v}" for k, v in fields.items())
    return text, frame("session-info", pairs(fields.items()), title="🗂 session")
