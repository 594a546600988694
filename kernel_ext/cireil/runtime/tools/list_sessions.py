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
    return {"sessions": sessions, "success": True}


def origin_field() -> AnyOf:
    return AnyOf(
        options=(String(), Array(items=String())),
        required=False,
        description="Session-id prefix(es), e.g. discord: (SQL LIKE: % and _ are wildcards)",
    )


TOOL = Tool(
    name="list-sessions",
    description=(
        "List persisted sessions (scheduled-job sessions excluded) with their last activity, message count and "
        "a preview of the last message."
    ),
    params=Params(
        limit=Number(minimum=1, maximum=30, default=15, description="Sessions per page"),
        offset=Number(minimum=0, default=0, description="Sessions to skip"),
        order=String(enum=("asc", "desc"), default="desc", description="By last activity; desc = most recent first"),
        origin=origin_field(),
        since=String(required=False, description="ISO-8601 date: only sessions active since then"),
    ),
    run=run,
)
