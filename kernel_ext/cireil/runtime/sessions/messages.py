"""Conversation messages: plain JSON-able dicts, stored as they are and passed to the provider.

    user          {"id", "role": "user", "timestamp", "content": [Part], "attachments"?: [Attachment]}
    assistant     {"id", "role": "assistant", "timestamp", "content": [Part], "reactions"?: [str],
                   "usage"?: {...}}
    toolResponse  {"id", "role": "toolResponse", "timestamp", "toolCallId", "name", "output": Any}
    system        {"id", "role": "system", "timestamp", "content": str}

    Part: {"type": "text", "text"} | {"type": "image" | "video", "mediaType", "data" (base64)}
        | {"type": "thinking", "thinking"} | {"type": "redactedThinking"}
        | {"type": "toolCall", "id", "name", "input": dict}
    Attachment: {"filename", "path" (host path of the stored copy), "size", "mediaType"}

A message may carry "persistent": False: a context message for the current turn only, dropped from
history when the turn ends (reference §7.4). Timestamps are ISO-8601 with an offset.

Each constructor escapes lone surrogates (a non-UTF-8 file name, a model's stray `\\udXXX`) with
`names.clean`: a message must encode as UTF-8 for sqlite and the provider, or the session is stuck.
"""

from __future__ import annotations

import operator
import re
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ..base.names import clean


def new_id() -> str:
    """Short, unique enough within an agent's sessions, and easy to type into read-history or prune-boundaries."""
    return "m" + secrets.token_hex(5)


def now_iso() -> str:
    return datetime.now(UTC).astimezone().isoformat(timespec="seconds")


def user_message(text: str, *, attachments: Iterable[dict] = (), parts: Iterable[dict] = (), **extra: Any) -> dict:
    content: list[dict] = [{"type": "text", "text": text}] if text else []
    content += list(parts)
    msg: dict[str, Any] = {"id": new_id(), "role": "user", "timestamp": now_iso(), "content": content}
    attached = list(attachments)
    if attached:
        msg["attachments"] = attached
    msg.update(extra)
    return clean(msg)


def assistant_message(parts: Iterable[dict], **extra: Any) -> dict:
    return clean({"id": new_id(), "role": "assistant", "timestamp": now_iso(), "content": list(parts), **extra})


def tool_response(call_id: str, name: str, output: Any) -> dict:
    return {
        "id": new_id(),
        "role": "toolResponse",
        "timestamp": now_iso(),
        "toolCallId": call_id,
        "name": name,
        "output": clean(output),
    }


def system_message(text: str, **extra: Any) -> dict:
    return clean({"id": new_id(), "role": "system", "timestamp": now_iso(), "content": text, **extra})


CALL_ID = re.compile(r"[A-Za-z0-9_-]{1,128}\Z")


def unique_call_ids(message: dict, history: list[dict], known: dict[str, Any] | None = None) -> None:
    """Give the message's tool calls ids unique in the session and of the form Anthropic accepts.

    Some backends number calls per reply (call_0, call_1, ...); a session stores them all, and the original
    runtime pairs calls with results by id across the whole history (upstream-formats §7). known: what the
    caller keeps between calls on one session (Session.call_ids), so that a step reads the messages appended
    since the last, not the whole history again (12 ms a step at 10,000 messages)."""
    calls = tool_calls(message)
    if not calls:
        return
    taken = _taken_ids(history, known if known is not None else {})
    given: set[str] = set()
    for part in calls:
        call_id = part.get("id")
        if not isinstance(call_id, str) or not CALL_ID.match(call_id) or call_id in taken or call_id in given:
            part["id"] = call_id = new_call_id()
        given.add(call_id)


def _taken_ids(history: list[dict], known: dict[str, Any]) -> set:
    """The call ids in history; known holds the messages read before and their ids. Those messages are read
    again only when the history no longer starts with them (compared by identity, in C): a stored message's
    call ids never change in place."""
    order: list[dict] = known.get("order", [])
    ids: set = known.get("ids", set())
    if not starts_with(history, order):
        order, ids = [], set()
    for m in history[len(order) :]:
        ids.update(p.get("id") for p in tool_calls(m))
    known["order"], known["ids"] = list(history), ids
    return ids


def starts_with(history: list[dict], order: list[dict]) -> bool:
    """Whether history begins with these very messages (identity, compared in C: a long session's history is
    looked at after every tool call)."""
    return len(history) >= len(order) and all(map(operator.is_, history, order))


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def new_call_id() -> str:
    """`call_` + 24 alphanumerics: the form the original's providers use and Anthropic accepts."""
    return "call_" + "".join(secrets.choice(_ALNUM) for _ in range(24))


def tool_calls(message: dict) -> list[dict]:
    if message.get("role") != "assistant":
        return []
    return [p for p in message.get("content", ()) if p.get("type") == "toolCall"]


def searchable_text(message: dict) -> str:
    """What query-sessions searches (reference §4.16): the parts with text content, joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content or () if p.get("type") == "text" and p.get("text"))
