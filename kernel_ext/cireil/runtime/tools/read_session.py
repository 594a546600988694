"""read-session: a persisted session's user and assistant messages (reference §4.14)."""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Number, Params, String
from ..sessions.store import SessionError, SessionStore, to_epoch
from ..toolkit.conversation_tools import absolute_time, conversation_messages, message_text, store_of
from ..toolkit.tool import Tool, ToolContext


def _whole(store: SessionStore, session_id: str) -> list[dict]:
    """The stored session's messages from a decode of all of it (the page path could not serve it)."""
    try:
        stored = store.get(session_id)
    except SessionError as exc:
        raise ToolError(str(exc), hint="The session's row in sessions.db is not in the original's format.") from None
    if stored is None:
        raise ToolError(f"Session not found: {session_id}", hint="list-sessions shows the sessions there are.")
    return stored.history


def _page(history: list[dict], args: dict) -> tuple[list[dict], int]:
    messages = conversation_messages(history)
    since = to_epoch(args.get("since"))
    if since is not None:  # an unparseable `since` is ignored (reference)
        messages = [m for m in messages if (to_epoch(m.get("timestamp")) or 0) >= since]
    if args["order"] == "desc":
        messages = messages[::-1]
    offset, limit = int(args["offset"]), int(args["limit"])
    return messages[offset : offset + limit], len(messages)


async def run(args: dict, ctx: ToolContext) -> dict:
    store = store_of(ctx, "read-session")
    session_id: str = args["id"]
    if session_id == ctx.session.id:
        # the turn in progress is not committed yet; it is readable too
        page, total = _page(ctx.session.history, args)
    else:
        # another session: only the messages of the page are read and decoded (sessions/pages.py), unless the
        # side file cannot say where they are; then the whole session is, with the same result
        found = store.read_page(
            session_id,
            since=args.get("since"),
            order=args["order"],
            offset=int(args["offset"]),
            limit=int(args["limit"]),
        )
        page, total = found if found is not None else _page(_whole(store, session_id), args)
    out = []
    for message in page:
        # the id is more than the reference returns: in a notebook it is how the agent names messages to
        # prune-boundaries, read-history and react (Discord messages carry theirs in the text instead)
        item = {"content": message_text(message), "id": message["id"], "role": message["role"]}
        stamp = absolute_time(message.get("timestamp"))
        if stamp:
            item["timestamp"] = stamp
        out.append(item)
    return {"id": session_id, "messages": out, "success": True, "totalMessages": total}


TOOL = Tool(
    name="read-session",
    description=(
        "Read the full message history of a specific session.\n\n"
        "Use this to get detailed context on a past conversation found via `list-sessions` or "
        "`query-sessions`.\n"
        "Returns only user and assistant messages."
    ),
    params=Params(
        id=String(min_length=1, description="The session ID to read."),
        limit=Number(
            minimum=1, maximum=100, default=50, description="Max messages to return (1-100).", description_first=True
        ),
        offset=Number(minimum=0, default=0, description="Offset for pagination.", description_first=True),
        order=String(
            enum=("asc", "desc"), default="desc", description="Sort order (asc or desc).", description_first=True
        ),
        since=String(required=False, description="ISO-8601 timestamp; filter by message timestamp >= since."),
    ),
    run=run,
    main_arg="id",
)
