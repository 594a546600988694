"""query-sessions: search the text of persisted user and assistant messages (reference §4.16)."""

from __future__ import annotations

import asyncio
import re

from ..base.errors import ToolError
from ..base.params import Number, Params, String
from ..sessions.search import MODES, SearchBudgetExceeded, search_budget
from ..toolkit.conversation_tools import store_of
from ..toolkit.tool import Tool, ToolContext
from .list_sessions import origin_field


async def run(args: dict, ctx: ToolContext) -> dict:
    store = store_of(ctx, "query-sessions")
    try:
        with search_budget() as budget:
            matches, total = store.query(
                args["query"],
                mode=args["mode"],
                limit=int(args["limit"]),
                offset=int(args["offset"]),
                order=args["order"],
                origin=args.get("origin"),
                since=args.get("since"),
            )
    except re.error as exc:
        raise ToolError(
            f"Invalid regular expression: {exc}", hint="Fix the pattern, or search with mode raw or glob."
        ) from None
    except Exception as exc:
        # SQLite reports an exception raised in its match callback as its own error: the budget says which
        if budget.cancelled:
            raise asyncio.CancelledError from None  # interrupted: the call is cancelled, not failed
        if not (budget.exceeded or isinstance(exc, SearchBudgetExceeded)):
            raise
        raise ToolError(
            f"The search ran out of its {budget.seconds:g} s time budget after testing {budget.tested} messages.",
            hint="Narrow it: a longer literal in the query, origin, or since.",
        ) from None
    # while the index is built in the background (the first load of a big agent): the matches among what is
    # indexed so far, and a note saying so, never partial results without a word
    return {"matches": matches, "success": True, "totalMatches": total, **(store.index_status() or {})}


TOOL = Tool(
    name="query-sessions",
    description=(
        "Search message contents across multiple sessions.\n\n"
        "Use this to find specific information or past discussions by keyword.\n"
        "Returns matched messages with their session ID and timestamp."
    ),
    params=Params(
        limit=Number(
            minimum=1, maximum=30, default=15, description="Max results to return (1-30).", description_first=True
        ),
        mode=String(enum=MODES, default="glob", description="Search mode (raw, glob, regex).", description_first=True),
        offset=Number(minimum=0, default=0, description="Offset for pagination.", description_first=True),
        order=String(
            enum=("asc", "desc"), default="desc", description="Sort order (asc or desc).", description_first=True
        ),
        origin=origin_field(),
        query=String(min_length=1, description="The search query."),
        since=String(required=False, description="ISO-8601 timestamp; filter by lastActivity >= since."),
    ),
    run=run,
    main_arg="query",
)
