"""list-sessions: the persisted sessions, most recently active first (reference §4.15)."""

from __future__ import annotations

from ..base.params import AnyOf, Array, Number, Params, String
from ..toolkit.conversation_tools import store_of
from ..toolkit.tool import Tool, ToolContext


async def run(args: dict, ctx: ToolContext) -> dict:
    store = store_of(ctx, "list-sessions")
    sessions = store.list_sessions(
        limit=int(args["limit"]),
        offset=int(args["offset"]),
        order=args["order"],
        origin=args.get("origin"),
        since=args.get("since"),
    )
    # while the index is built in the background (the first load of a big agent): what is indexed so far,
    # and a note saying so, never a partial list without a word
    return {"sessions": sessions, "success": True, **(store.index_status() or {})}


def origin_field() -> AnyOf:
    return AnyOf(
        options=(String(), Array(items=String())),
        required=False,
        description="Prefix-match against session ID (e.g. 'discord' matches 'discord:*').",
    )


TOOL = Tool(
    name="list-sessions",
    description=(
        "List available sessions with metadata and a preview of the last message.\n\n"
        "Use this to find relevant past conversations before reading them with `read-session`.\n"
        "Ephemeral cron sessions are automatically excluded."
    ),
    params=Params(
        limit=Number(
            minimum=1, maximum=30, default=15, description="Max sessions to return (1-30).", description_first=True
        ),
        offset=Number(minimum=0, default=0, description="Offset for pagination.", description_first=True),
        order=String(
            enum=("asc", "desc"), default="desc", description="Sort order (asc or desc).", description_first=True
        ),
        origin=origin_field(),
        since=String(required=False, description="ISO-8601 timestamp; filter by lastActivity >= since."),
    ),
    run=run,
)
