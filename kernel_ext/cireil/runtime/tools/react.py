"""react: add an emoji reaction to a message of this conversation (reference §4.18)."""

from __future__ import annotations

from ..base.errors import ToolError
from ..base.params import Params, String
from ..toolkit.conversation_tools import require_channel, store_of
from ..toolkit.tool import Tool, ToolContext

UNSUPPORTED = "Reactions are not supported on this channel"


async def run(args: dict, ctx: ToolContext) -> dict:
    require_channel(ctx, UNSUPPORTED)
    store = store_of(ctx, "react")
    assert ctx.conversation is not None  # store_of checked it
    message_id = args.get("message_id") or ctx.conversation.trigger_message_id
    if not message_id:
        raise ToolError(
            "No message to react to: this call was not triggered by a message.",
            hint="Give message_id (read-history or read-session show the ids).",
        )
    emoji: str = args["emoji"]
    in_history = next((m for m in ctx.session.history if m.get("id") == message_id), None)
    stored = store.find_message(ctx.session.id, message_id)
    message = in_history if in_history is not None else stored
    if message is None:
        raise ToolError(f"Message not found: {message_id}", hint="Give the id of a message of this conversation.")
    reactions = message.setdefault("reactions", [])
    if emoji not in reactions:
        reactions.append(emoji)
    if in_history is not None:
        ctx.session.touch(in_history)  # the live session: its committed part is saved, a turn in progress stays out
        store.save_state(ctx.session)
    elif stored is not None:
        store.update_message(ctx.session.id, message)
    ctx.conversation.events({"type": "react", "sessionId": ctx.session.id, "messageId": message_id, "emoji": emoji})
    return {"reacted": True, "success": True}


TOOL = Tool(
    name="react",
    description=(
        "Add an emoji reaction to a message. This does NOT end your turn — combine with `no-response` if you "
        "only want to react. Only works on platforms that support reactions (check capabilities in system "
        "prompt)."
    ),
    params=Params(
        emoji=String(min_length=1, description='Unicode emoji (e.g. "👍") or custom emoji in "name:id" format.'),
        # default: the message that started this turn (run)
        message_id=String(min_length=1, nullable=True, required=False),
    ),
    run=run,
    main_arg="emoji",
)
