"""respond called from a cell: the message as the chat bubble it becomes, and whether it ends a turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .chat import agent_bubble
from .html import FG_DIM, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    args = result.args
    channel = args.get("channel") or "current"
    final = result.data.get("final") is not False
    text, bubble = agent_bubble(
        str(args.get("content", "")),
        agent=result.agent.slug if result.agent is not None else "agent",
        attachments=[(p, None) for p in args.get("attachments") or ()],
        final=final,
        to=None if channel == "current" else channel,
    )
    ends = "a final message: it would end the agent's turn" if final else "an update: the turn would go on"
    return f"{text}\n(sent; {ends})", frame("respond", bubble + f'<div style="color:{FG_DIM}">sent; {esc(ends)}</div>')
