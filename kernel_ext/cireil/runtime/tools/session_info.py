"""session-info: describe the current session (spec: every session type reports platform and id)."""

from __future__ import annotations

from ..base.params import Params
from ..toolkit.tool import SpecDifference, Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    return {"platform": ctx.session.platform, "session_id": ctx.session.id, "success": True}


TOOL = Tool(
    name="session-info",
    description=(
        "Get information about the current session context.\n\n"
        "Returns:\n"
        '- `platform`: The platform type ("discord", "matrix", "tui", "internal", or "remote")\n'
        "- `session_id`: The current session's ID\n"
        "- `channel_id` (Discord only): The Discord channel ID\n"
        "- `guild_id` (Discord only, optional): The Discord guild/server ID (undefined for DMs)\n"
        "- `parent_channel_id` (Discord only, optional): The parent channel ID for threads/forum posts\n"
        "- `is_nsfw` (Discord only): Whether the channel is marked NSFW\n\n"
        "Use this to get the IDs needed for other platform-specific operations."
    ),
    params=Params(),
    run=run,
    spec_differences=(
        SpecDifference(
            "description",
            'the `platform` line also names "matrix" and "remote", and a `session_id` line is added',
            'spec "Built-in tools": "session-info returns platform and session_id for Discord, Matrix, TUI, '
            'internal, and remote sessions" (reference §10 #11)',
        ),
    ),
)
