"""invoke: queue a turn in another existing session (spec: built-in since 2.0.0).

The turn runs after the current one ends, one at a time per agent, with the prompt as its user
message; what it responds lands in that session's history.
"""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Params, String
from ..toolkit.tool import SpecDifference, Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    session_id: str = args["session"]
    conversation = ctx.conversation
    if conversation is None or conversation.host is None:
        raise ToolError("invoke needs a running agent", hint="Load the agent with cireil.load or %cireil load.")
    if session_id == ctx.session.id:
        raise ToolError(
            "A session cannot invoke itself.", hint="Keep working in this turn, or use schedule for later work."
        )
    if not conversation.store.exists(session_id):
        raise ToolError(f"Session not found: {session_id}", hint="list-sessions shows the session ids that exist.")
    conversation.host.queue_turn(session_id, args["prompt"], source=ctx.session.id)
    return {"queued": True, "session": session_id, "success": True}


TOOL = Tool(
    name="invoke",
    description=(
        "Queue a turn in another existing session: prompt becomes its user message, and the turn runs after "
        "this one ends. Use it to hand work to a session that has the right context."
    ),
    params=Params(
        session=String(min_length=1, description="Id of an existing session (see list-sessions)"),
        prompt=String(min_length=1, description="The message that starts the queued turn"),
    ),
    run=run,
    body_arg="prompt",
    spec_differences=(
        SpecDifference(
            "tool",
            "a built-in the original does not have",
            'spec "Built-in tools": "invoke: Queue a turn in another existing session." (reference §10 #13)',
        ),
    ),
)
