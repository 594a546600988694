"""invoke: which session got the queued turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, OK, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    session = result.data.get("session", "")
    prompt = result.args.get("prompt", "")
    text = f"queued a turn in {session}: {prompt}"
    body = (
        f'<span style="color:{OK}">↪</span> queued a turn in {code(session)}'
        f': {esc(prompt)}<div style="color:{FG_DIM};font-size:90%">it runs after the current turn ends</div>'
    )
    return text, frame("invoke", body)
