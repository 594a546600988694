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
    description=(
        "Explicitly decline to respond to the user. Use this when the message doesn't warrant a reply — e.g. "
        "someone else's conversation, noise you should ignore, or a command already handled silently. This "
        "ends your turn without sending any message.\n"
        "On platforms that support reactions, consider reacting first to acknowledge the message before "
        "calling no-response."
    ),
    params=Params(),
    run=run,
)
