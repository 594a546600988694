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
        "Commit a topic compaction range. Called by the summarizer to replace a range of messages with a "
        "summary in the LLM-visible prompt. The full messages remain in the database for forensics.\n\n"
        "Parameters:\n"
        "- start/end: first and last message IDs in the range\n"
        "- preserve: message IDs to keep verbatim (exact outputs, schemas, config)\n"
        "- summary: concise summary preserving decisions, constraints, and file changes\n"
        "- identifier: short name for this topic (e.g. 'auth-refactor')"
    ),
    params=Params(
        end=String(min_length=1, description="Last message ID in the range to compact."),
        identifier=String(min_length=1, description="Short name for this topic (e.g. 'auth-refactor')."),
        preserve=Array(
            items=String(min_length=1),
            default=[],
            description="Message IDs to keep verbatim inside the summary envelope.",
        ),
        start=String(min_length=1, description="First message ID in the range to compact."),
        summary=String(
            min_length=1, description="Concise summary preserving decisions, constraints, and file changes."
        ),
    ),
    run=run,
)
