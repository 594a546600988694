"""The history a production turn started from, read back from the request its first model call sent.

The proxy never sees sessions.db, and the turn's user message there has an id the request does not carry; but
the first request of the turn holds the whole history the model was given. So a fork of a production turn
(recorder/fork.py) starts from those messages, turned back into session messages: the system prompt, the
volatile messages the original appends after the history (its date metadata, opened files) and the turn's own
new user message left out. Tool results come back as the original sent them (the `name` it adds left out).
"""

from __future__ import annotations

import json
from typing import Any

from ..sessions import messages as msgs
from .capture import VOLATILE_PREFIXES
from .wire import _result, messages_of, user_texts


def _arguments(raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _user(texts: list[str]) -> dict | None:
    text = "".join(texts)
    return msgs.user_message(text) if text else None


def _openai(messages: list) -> list[dict]:
    out: list[dict] = []
    names: dict[str, str] = {}
    for m in messages:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "user":
            user = _user(user_texts("openai", m))
            if user:
                out.append(user)
        elif role == "assistant":
            parts: list[dict] = []
            if isinstance(m.get("content"), str) and m["content"]:
                parts.append({"type": "text", "text": m["content"]})
            for call in m.get("tool_calls") or ():
                fn = call.get("function") or {}
                names[str(call.get("id"))] = str(fn.get("name") or "")
                parts.append(
                    {
                        "type": "toolCall",
                        "id": call.get("id"),
                        "name": fn.get("name"),
                        "input": _arguments(fn.get("arguments")),
                    }
                )
            out.append(msgs.assistant_message(parts))
        elif role == "tool":
            call_id = str(m.get("tool_call_id"))
            out.append(msgs.tool_response(call_id, names.get(call_id, ""), _result(m.get("content"))))
    return out


def _anthropic(messages: list) -> list[dict]:
    out: list[dict] = []
    names: dict[str, str] = {}
    for m in messages:
        if not isinstance(m, dict):
            continue
        blocks = m.get("content")
        blocks = [{"type": "text", "text": blocks}] if isinstance(blocks, str) else blocks or []
        if m.get("role") == "assistant":
            parts: list[dict] = []
            for b in blocks:
                if b.get("type") == "text":
                    parts.append({"type": "text", "text": b.get("text", "")})
                elif b.get("type") == "thinking":
                    parts.append({"type": "thinking", "thinking": b.get("thinking", "")})
                elif b.get("type") == "tool_use":
                    names[str(b.get("id"))] = str(b.get("name") or "")
                    parts.append(
                        {"type": "toolCall", "id": b.get("id"), "name": b.get("name"), "input": b.get("input") or {}}
                    )
            out.append(msgs.assistant_message(parts))
        elif m.get("role") == "user":
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    call_id = str(b.get("tool_use_id"))
                    out.append(msgs.tool_response(call_id, names.get(call_id, ""), _result(b.get("content"))))
            user = _user(user_texts("anthropic", m))
            if user:
                out.append(user)
    return out


def _codex(items: list) -> list[dict]:
    out: list[dict] = []
    names: dict[str, str] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            user = _user(user_texts("openai-codex", item))
            if user:
                out.append(user)
        elif kind == "message" and item.get("role") == "assistant":
            texts = [p.get("text", "") for p in item.get("content") or () if isinstance(p, dict)]
            out.append(msgs.assistant_message([{"type": "text", "text": "".join(texts)}]))
        elif kind == "function_call":
            call_id = str(item.get("call_id"))
            names[call_id] = str(item.get("name") or "")
            call = {
                "type": "toolCall",
                "id": call_id,
                "name": item.get("name"),
                "input": _arguments(item.get("arguments")),
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                last["content"].append(call)  # the calls of one reply travel as separate items
            else:
                out.append(msgs.assistant_message([call]))
        elif kind == "function_call_output":
            call_id = str(item.get("call_id"))
            out.append(msgs.tool_response(call_id, names.get(call_id, ""), _result(item.get("output"))))
    return out


def history_before(turn: Any) -> list[dict]:
    """Session messages of the history `turn` (a production turn) started from; ValueError if it has none."""
    production = (turn.origin or {}).get("production") if isinstance(turn.origin, dict) else None
    if not isinstance(production, dict):
        raise ValueError(f"turn {turn.id} is not a production turn")
    if not turn.steps or not isinstance(turn.steps[0].request, dict):
        raise ValueError(f"turn {turn.id} has no recorded request to read its history from")
    kind = str(production.get("kind") or "")
    sent = messages_of(kind, turn.steps[0].request)
    read = {"anthropic": _anthropic, "openai-codex": _codex}.get(kind, _openai)
    history = read(sent)
    # the original's volatile tail (metadata, opened files) is not history; the turn's own message is the fork's
    while history and history[-1]["role"] == "user" and _text(history[-1]).startswith(VOLATILE_PREFIXES):
        history.pop()
    own = " ".join((turn.text or "").split())
    if history and history[-1]["role"] == "user" and " ".join(_text(history[-1]).split()) == own:
        history.pop()
    return history


def _text(message: dict) -> str:
    return "".join(p.get("text", "") for p in message.get("content") or () if isinstance(p, dict))
