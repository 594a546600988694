"""The replies of the three provider protocols the original speaks, read back into the recorder's reply shape.

A reply (JSON or a Server-Sent Events stream, as the provider sent it) becomes
`{"content", "reasoning", "tool_calls": [{"id", "name", "arguments"}], "finish_reason", "usage"}`, the shape
`recorder/recording.py` keeps for cireil's own model calls, so replay, fork and the views read both alike.
Usage keeps the provider's own counts and adds `prompt_tokens` / `completion_tokens` where the provider names
them otherwise (Anthropic, Responses API), as the views read those.
"""

from __future__ import annotations

import json
from typing import Any

KINDS = ("openai", "anthropic", "openai-codex")


def endpoint_kind(path: str) -> str | None:
    """Which protocol a request path speaks (None: a path that is forwarded but not recorded, such as /models)."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/codex/responses"):
        return "openai-codex"
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return None


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(event name, data) of each event of a Server-Sent Events text; data lines joined by newlines."""
    out: list[tuple[str | None, str]] = []
    name: str | None = None
    data: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line:
            if data:
                out.append((name, "\n".join(data)))
            name, data = None, []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        out.append((name, "\n".join(data)))
    return out


def _json_events(text: str) -> list[dict]:
    events = []
    for _, data in sse_events(text):
        if data.strip() == "[DONE]":
            continue
        try:
            value = json.loads(data)
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def _arguments(raw: Any) -> tuple[dict, str | None]:
    """Arguments as an object, and the raw text when it is not a JSON object (the model's own invalid JSON)."""
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return {}, raw
        if isinstance(value, dict):
            return value, None
        return {}, raw
    return {}, None if raw is None else json.dumps(raw)


def _call(call_id: Any, name: Any, raw: Any) -> dict:
    arguments, invalid = _arguments(raw)
    call = {"id": call_id, "name": name, "arguments": arguments}
    if invalid is not None:
        call["rawArguments"] = invalid
    return call


def _usage(usage: Any, prompt_key: str, completion_key: str) -> dict:
    if not isinstance(usage, dict):
        return {}
    out = dict(usage)
    if prompt_key in usage and "prompt_tokens" not in usage:
        out["prompt_tokens"] = usage[prompt_key]
    if completion_key in usage and "completion_tokens" not in usage:
        out["completion_tokens"] = usage[completion_key]
    return out


def read_reply(kind: str, status: int, content_type: str, text: str) -> dict:
    """The reply in the recorder's shape; an HTTP error or an unreadable body as `{"error": ..., "content": None}`
    (the shape a retried model call has in cireil's own recordings)."""
    if status >= 400:
        return {"error": f"HTTP {status}: {_error_text(text)}", "content": None, "status": status}
    streamed = "event-stream" in content_type.lower()
    try:
        if kind == "openai":
            return _openai_stream(text) if streamed else _openai_json(json.loads(text))
        if kind == "anthropic":
            return _anthropic_stream(text) if streamed else _anthropic_json(json.loads(text))
        if kind == "openai-codex":
            if streamed:
                return _codex_stream(text)
            return _codex_response(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        return {"error": f"the reply could not be read as {kind}: {type(exc).__name__}: {exc}", "content": None}
    return {"error": f"no reader for provider kind {kind!r}", "content": None}


def _error_text(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        return text[:2000]
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(value, dict) and isinstance(value.get("detail"), str):
        return value["detail"]
    return text[:2000]


def _reply(content: str, reasoning: str, calls: list[dict], finish: Any, usage: dict) -> dict:
    return {
        "content": content or None,
        "reasoning": reasoning or None,
        "tool_calls": calls,
        "finish_reason": finish,
        "usage": usage,
    }


# -- OpenAI chat completions ------------------------------------------------------------------------------
def _openai_json(body: dict) -> dict:
    if isinstance(body.get("error"), dict):  # some servers answer 200 with an error object
        return {"error": str(body["error"].get("message", body["error"])), "content": None}
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    calls = [
        _call(c.get("id"), (c.get("function") or {}).get("name"), (c.get("function") or {}).get("arguments"))
        for c in message.get("tool_calls") or ()
    ]
    content = message.get("content")
    return _reply(
        content if isinstance(content, str) else "",
        reasoning if isinstance(reasoning, str) else "",
        calls,
        choice.get("finish_reason"),
        _usage(body.get("usage"), "prompt_tokens", "completion_tokens"),
    )


def _openai_stream(text: str) -> dict:
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict] = {}
    finish = None
    usage: dict = {}
    for event in _json_events(text):
        if isinstance(event.get("error"), dict):
            return {"error": str(event["error"].get("message", event["error"])), "content": "".join(content) or None}
        if isinstance(event.get("usage"), dict):
            usage = _usage(event["usage"], "prompt_tokens", "completion_tokens")
        for choice in event.get("choices") or ():
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            for key in ("reasoning_content", "reasoning"):
                if isinstance(delta.get(key), str):
                    reasoning.append(delta[key])
            for piece in delta.get("tool_calls") or ():
                call = calls.setdefault(piece.get("index", 0), {"id": None, "name": None, "arguments": []})
                if piece.get("id"):
                    call["id"] = piece["id"]
                function = piece.get("function") or {}
                if function.get("name"):
                    call["name"] = function["name"]
                if isinstance(function.get("arguments"), str):
                    call["arguments"].append(function["arguments"])
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    made = [_call(c["id"], c["name"], "".join(c["arguments"])) for _, c in sorted(calls.items())]
    return _reply("".join(content), "".join(reasoning), made, finish, usage)


# -- Anthropic messages -------------------------------------------------------------------------------------
def _anthropic_json(body: dict) -> dict:
    if body.get("type") == "error":
        return {"error": str((body.get("error") or {}).get("message", body)), "content": None}
    content, reasoning, calls = [], [], []
    for block in body.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            content.append(block.get("text") or "")
        elif kind == "thinking":
            reasoning.append(block.get("thinking") or "")
        elif kind == "tool_use":
            calls.append(_call(block.get("id"), block.get("name"), block.get("input")))
    usage = _usage(body.get("usage"), "input_tokens", "output_tokens")
    return _reply("".join(content), "".join(reasoning), calls, body.get("stop_reason"), usage)


def _anthropic_stream(text: str) -> dict:
    blocks: dict[int, dict] = {}
    finish = None
    usage: dict = {}
    for event in _json_events(text):
        kind = event.get("type")
        if kind == "error":
            return {"error": str((event.get("error") or {}).get("message", event)), "content": None}
        if kind == "message_start":
            usage.update((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            block["parts"] = []
            blocks[event.get("index", len(blocks))] = block
        elif kind == "content_block_delta":
            block = blocks.setdefault(event.get("index", 0), {"type": "text", "parts": []})
            delta = event.get("delta") or {}
            for key in ("text", "thinking", "partial_json"):
                if isinstance(delta.get(key), str):
                    block["parts"].append(delta[key])
        elif kind == "message_delta":
            finish = (event.get("delta") or {}).get("stop_reason") or finish
            usage.update(event.get("usage") or {})
    content, reasoning, calls = [], [], []
    for _, block in sorted(blocks.items()):
        joined = "".join(block["parts"])
        if block.get("type") == "text":
            content.append((block.get("text") or "") + joined)
        elif block.get("type") == "thinking":
            reasoning.append((block.get("thinking") or "") + joined)
        elif block.get("type") == "tool_use":
            raw = joined if block["parts"] else block.get("input")
            calls.append(_call(block.get("id"), block.get("name"), raw))
    return _reply("".join(content), "".join(reasoning), calls, finish, _usage(usage, "input_tokens", "output_tokens"))


# -- Responses API (openai-codex) ------------------------------------------------------------------------------
def _codex_response(response: dict) -> dict:
    if response.get("status") == "failed" or isinstance(response.get("error"), dict):
        error = response.get("error") or {}
        return {"error": str(error.get("message", "the response failed")), "content": None}
    content, reasoning, calls = [], [], []
    for item in response.get("output") or ():
        kind = item.get("type")
        if kind == "message":
            content += [p.get("text") or "" for p in item.get("content") or () if p.get("type") == "output_text"]
        elif kind == "reasoning":
            reasoning += [p.get("text") or "" for p in item.get("summary") or ()]
        elif kind == "function_call":
            calls.append(_call(item.get("call_id"), item.get("name"), item.get("arguments")))
    finish = "tool_calls" if calls else response.get("status")
    usage = _usage(response.get("usage"), "input_tokens", "output_tokens")
    return _reply("".join(content), "".join(reasoning), calls, finish, usage)


def _codex_stream(text: str) -> dict:
    items: list[dict] = []
    for event in _json_events(text):
        kind = event.get("type")
        if kind in ("response.completed", "response.done", "response.failed", "response.incomplete"):
            response = dict(event.get("response") or {})
            if not response.get("output") and items:  # a backend that sends the items only one by one
                response["output"] = items
            return _codex_response(response)
        if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            items.append(event["item"])
        if kind == "error":
            return {"error": str(event.get("message", event)), "content": None}
    return {"error": "the stream ended without a final response event", "content": None}


# -- what a request says: its messages, tool results, system prompt -------------------------------------------
def messages_of(kind: str, body: dict) -> list:
    key = "input" if kind == "openai-codex" else "messages"
    value = body.get(key)
    return value if isinstance(value, list) else []


def system_text(kind: str, body: dict) -> str:
    """The system prompt the request carries (where the original writes the session's channel lines)."""
    if kind == "anthropic":
        system = body.get("system")
        if isinstance(system, str):
            return system
        return "".join(b.get("text", "") for b in system or () if isinstance(b, dict))
    if kind == "openai-codex":
        return body.get("instructions") if isinstance(body.get("instructions"), str) else ""
    for message in messages_of(kind, body):
        if isinstance(message, dict) and message.get("role") == "system" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


def tool_results(kind: str, body: dict) -> dict[str, dict]:
    """call id -> the result the original sent back to the model for it (its JSON object, `name` left out)."""
    out: dict[str, dict] = {}
    for message in messages_of(kind, body):
        if not isinstance(message, dict):
            continue
        if kind == "openai" and message.get("role") == "tool":
            out[str(message.get("tool_call_id"))] = _result(message.get("content"))
        elif kind == "anthropic" and message.get("role") == "user" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out[str(block.get("tool_use_id"))] = _result(block.get("content"))
        elif kind == "openai-codex" and message.get("type") == "function_call_output":
            out[str(message.get("call_id"))] = _result(message.get("output"))
    return out


def _result(content: Any) -> dict:
    if isinstance(content, list):  # content parts (media results): their text joined
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if isinstance(content, str):
        try:
            value = json.loads(content)
        except ValueError:
            return {"output": content}
        if isinstance(value, dict):
            value.pop("name", None)  # the original adds the tool's name to what it sends
            return value
        return {"output": value}
    return {"output": content}


def user_texts(kind: str, message: Any) -> list[str]:
    """The text parts of a user message of the request (none for tool results)."""
    if not isinstance(message, dict) or message.get("role") != "user":
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and part.get("type") in ("text", "input_text") and isinstance(part.get("text"), str):
            out.append(part["text"])
    return out
