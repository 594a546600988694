"""no-response: end the turn without sending anything (reference §4.2)."""

from __future__ import annotations

from ..base.params import Params
from ..toolkit.tool import Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    return {"final": True}


TOOL = Tool(
    name="no-response",
    ends_turn="always",
    breakable=False,
    always_granted=True,
    description="End your turn without sending a message (when nothing needs saying).",
    params=Params(),
    run=run,
)
