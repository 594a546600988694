"""read-history: messages of the current conversation around a given one (reference §4.13)."""

from __future__ import annotations

from html import escape

from ..base.errors import ToolError
from ..base.params import Number, Params, String
from ..toolkit.conversation_tools import conversation_messages, require_channel, store_of
from ..toolkit.tool import Tool, ToolContext

UNSUPPORTED = "This channel does not support history fetching"


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _text(message: dict) -> str:
    """What the person reads: a user's text, or what the agent sent with respond."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content or ()
    if message["role"] == "assistant":
        sent = [
            p["input"]["content"]
            for p in parts
            if p.get("type") == "toolCall"
            and p.get("name") == "respond"
            and isinstance((p.get("input") or {}).get("content"), str)
        ]
        if sent:
            return "\n".join(sent)
    return "\n".join(p["text"] for p in parts if p.get("type") == "text" and p.get("text"))


def format_message(message: dict) -> str:
    who = "user" if message["role"] == "user" else "agent"
    head = f'<msg from="{who}" id="{_attr(message.get("id", ""))}" timestamp="{_attr(message.get("timestamp", ""))}">'
    lines = [_text(message)]
    lines += [
        f'<attachment filename="{_attr(a.get("filename", ""))}" size="{_attr(a.get("size", ""))}"/>'
        for a in message.get("attachments") or ()
    ]
    return head + "\n".join(lines) + "</msg>"


def window(messages: list[dict], index: int, direction: str, limit: int) -> list[dict]:
    """The anchor's neighbours, oldest first; agent messages that sent nothing (tool calls only) are skipped."""
    anchor = messages[index]
    before = [m for m in messages[:index] if m["role"] == "user" or _text(m)]
    after = [m for m in messages[index + 1 :] if m["role"] == "user" or _text(m)]
    if direction == "before":
        return before[-limit:] if limit else []
    if direction == "after":
        return after[:limit]
    # around: the anchor in the middle; a side with too few messages leaves its share to the other
    wanted_before = min(len(before), (limit - 1) // 2)
    taken_after = after[: limit - 1 - wanted_before]
    taken_before = before[len(before) - (limit - 1 - len(taken_after)) :] if limit > 1 else []
    return [*taken_before, anchor, *taken_after]


async def run(args: dict, ctx: ToolContext) -> dict:
    require_channel(ctx, UNSUPPORTED)
    store_of(ctx, "read-history")
    messages = conversation_messages(ctx.session.history)
    message_id: str = args["message_id"]
    index = next((i for i, m in enumerate(messages) if m.get("id") == message_id), None)
    if index is None:
        raise ToolError(
            f"Message not found: {message_id}",
            hint="Give the id of a user or agent message of this conversation (read-session shows them).",
        )
    chosen = window(messages, index, args["direction"], int(args["limit"]))
    if not chosen:
        return {"messages": [], "success": True}
    return {
        "count": len(chosen),
        "direction": args["direction"],
        "messages": "\n".join(format_message(m) for m in chosen),
        "success": True,
    }


TOOL = Tool(
    name="read-history",
    description=(
        "Fetch message history from the current channel. Returns messages in chronological order (oldest "
        "first). Use this to read older or newer messages around a specific message ID. Only works on "
        "platforms that support history fetching (check capabilities in system prompt)."
    ),
    params=Params(
        direction=String(
            enum=("after", "around", "before"),
            default="before",
            description="Direction to fetch: 'before' (older), 'after' (newer), or 'around' (both).",
            description_first=True,
        ),
        limit=Number(
            minimum=1,
            maximum=100,
            default=50,
            description="Number of messages to fetch (1-100, default 50).",
            description_first=True,
        ),
        message_id=String(
            min_length=1, description="ID of the message to use as reference point for fetching history."
        ),
    ),
    run=run,
    main_arg="message_id",
)
