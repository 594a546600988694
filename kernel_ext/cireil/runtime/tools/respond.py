"""respond: send a message to the person, in this session or another (reference §4.1).

In a notebook the channel is the cell running the turn: the message renders there as a chat bubble.
Another session receives it in its history, where read-session and the next turn there see it.
"""

from __future__ import annotations

import stat

from ..base.errors import ToolError
from ..base.params import Array, Boolean, Params, String
from ..files import safefs
from ..toolkit.tool import Tool, ToolContext


def resolve_channel(channel: str, ctx: ToolContext) -> str:
    """The session id a channel name means; ToolError with the reference's texts when there is none."""
    conversation = ctx.conversation
    if channel == "current":
        return ctx.session.id
    if conversation is None:
        raise ToolError(f"session not found: {channel}", hint="Outside an agent turn only channel 'current' exists.")
    store = conversation.store
    if channel == "last":
        last = store.last_active()
        if last is None:
            raise ToolError("no active sessions found")
        return last
    if channel == "owner":
        raise ToolError(
            "ownerId not configured", hint="A notebook has no owner channel; use 'current' or a session id."
        )
    if store.exists(channel):
        return channel
    raise ToolError(f"session not found: {channel}", hint="list-sessions shows the session ids that exist.")


async def run(args: dict, ctx: ToolContext) -> dict:
    content: str = args["content"]
    channel = args.get("channel")
    channel = "current" if channel is None else channel  # "" is no channel name (the original: not found)
    final = args.get("final")
    final = True if final is None else final
    attachments: list[str] = list(args.get("attachments") or ())
    for path in attachments:  # checked now, read by whoever shows the message (as a channel would at send time)
        info = safefs.stat_entry(ctx.paths.resolve(path).target)
        if info is None or not stat.S_ISREG(info.st_mode):
            raise ToolError(f"Attachment not found or not a file: {path}", hint="Attach files by their sandbox path.")
    target = resolve_channel(channel, ctx)
    if target != ctx.session.id:
        final = False  # a message elsewhere never ends this turn (reference §4.1)
        if ctx.conversation is not None and ctx.conversation.host is not None:
            ctx.conversation.host.deliver(target, content, attachments=attachments, source=ctx.session.id)
    if ctx.conversation is not None:
        ctx.conversation.events(
            {
                "type": "respond",
                "sessionId": target,
                "fromSessionId": ctx.session.id,
                "content": content,
                "attachments": attachments,
                "final": final,
            }
        )
    return {"final": final, "sent": True}


TOOL = Tool(
    name="respond",
    ends_turn="success",
    breakable=False,
    always_granted=True,
    description=(
        "Send a message to a channel. This is the ONLY way to communicate — text written to files is not "
        "delivered.\n\n"
        'Set `final: false` to send an intermediate status update and keep working (e.g. "Looking into '
        'it..." before a long task); `true` (default) ends the turn.\n\n'
        'Use the `channel` parameter for cross-channel messaging: "current" (default) for this conversation, '
        '"last" for the most recently active session, "owner" to DM the bot owner, or an explicit session ID '
        'like "discord:123|456" for a specific channel.\n\n'
        "You must call this tool at least once per turn. Every turn must end with either a `final: true` "
        "respond call or a `no-response` call."
    ),
    # As the original sends them: the optional fields carry no description (its schema converter stops at
    # the transform that fills their defaults); run() fills the same defaults.
    params=Params(
        attachments=Array(items=String(min_length=1), nullable=True, required=False),
        channel=String(nullable=True, required=False),
        content=String(min_length=1, description="Your message in plain Markdown."),
        final=Boolean(nullable=True, required=False),
    ),
    run=run,
    main_arg="content",
    body_arg="content",
)
