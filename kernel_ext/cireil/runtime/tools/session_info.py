"""session-info: describe the current session (spec: every session type reports platform and id)."""

from __future__ import annotations

from ..base.params import Params
from ..toolkit.tool import Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    return {"platform": ctx.session.platform, "session_id": ctx.session.id, "success": True}


TOOL = Tool(
    name="session-info",
    description="Describe the current session: its platform and its session id.",
    params=Params(),
    run=run,
)
