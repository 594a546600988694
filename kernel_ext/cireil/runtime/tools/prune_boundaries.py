"""prune-boundaries: replace a range of history by a topic summary from now on (reference §4.21)."""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Array, Params, String
from ..toolkit.conversation_tools import store_of
from ..toolkit.tool import Tool, ToolContext

HINT = "Use read-session with this session's id to see the message ids."


async def run(args: dict, ctx: ToolContext) -> dict:
    store = store_of(ctx, "prune-boundaries")
    session = ctx.session
    positions = {m.get("id"): i for i, m in enumerate(session.history) if m.get("id")}
    start, end = args["start"], args["end"]
    missing = [f"{label}: {mid}" for label, mid in (("start", start), ("end", end)) if mid not in positions]
    if missing:
        raise ToolError(f"Message ID(s) not found in session history: {', '.join(missing)}", hint=HINT)
    start_index, end_index = positions[start], positions[end]
    if start_index > end_index:
        raise ToolError("Start message must come before end message in session history.", hint=HINT)
    preserve: list[str] = list(dict.fromkeys(args["preserve"]))
    unknown = [p for p in preserve if p not in positions]
    if unknown:
        raise ToolError(f"Preserved message ID(s) not found: {', '.join(unknown)}", hint=HINT)
    identifier: str = args["identifier"]
    from ..outline.slug import to_slug  # the outline package is loaded by calls, never by loading the agent

    slug = to_slug(identifier)
    if not slug:
        raise ToolError("Identifier produces an empty slug.", hint="Use letters or digits in the identifier.")
    summary = {
        "slug": slug,
        "displayName": identifier,
        "startMessageId": start,
        "endMessageId": end,
        "preserve": preserve,
        "summary": args["summary"],
    }
    previous = list(session.summaries)
    session.summaries[:] = [s for s in session.summaries if s.get("slug") != slug] + [summary]
    try:
        store.save_state(session)
    except BaseException:
        session.summaries[:] = previous  # the session and the database stay in step
        raise
    return {"identifier": identifier, "messagesCompacted": end_index - start_index + 1, "slug": slug, "success": True}


TOOL = Tool(
    name="prune-boundaries",
    description=(
        "Compact a finished topic: from now on the messages from start to end (ids, inclusive) are replaced by "
        "your summary, except the preserved ones, which stay verbatim. Same identifier replaces an earlier summary."
    ),
    params=Params(
        start=String(min_length=1, description="Id of the first message of the range"),
        end=String(min_length=1, description="Id of the last message of the range"),
        identifier=String(min_length=1, description="Topic name; its slug identifies the summary"),
        summary=String(min_length=1, description="What the range said that still matters"),
        preserve=Array(items=String(min_length=1), default=[], description="Ids kept verbatim"),
    ),
    run=run,
)
