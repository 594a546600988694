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
    channel: str = args.get("channel") or "current"
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
        "Send a message to the person. This is the only way your words reach anyone: text outside a respond call "
        "is never delivered. content is Markdown. channel is 'current' (default), 'last' (the most recently active "
        "session) or a session id. final=false sends an intermediate update and keeps working; otherwise the turn "
        "ends. attachments are sandbox paths of files to send along."
    ),
    params=Params(
        content=String(min_length=1, description="The message, in Markdown"),
        channel=String(min_length=1, nullable=True, default="current", description="current, last, or a session id"),
        final=Boolean(nullable=True, default=True, description="false = an intermediate update; keep working"),
        attachments=Array(
            items=String(min_length=1), nullable=True, required=False, description="Sandbox paths of files to attach"
        ),
    ),
    run=run,
    main_arg="content",
    body_arg="content",
)
