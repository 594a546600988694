"""kind = "anthropic": the Messages API (`POST {apiBase}/messages`), as the original's provider sends it.

upstream-formats §2.4: `Authorization: Bearer <key>` (the original is built for OAuth tokens, not
`x-api-key`), `anthropic-version: 2023-06-01`, `anthropic-beta: oauth-2025-04-20,interleaved-thinking-2025-05-14`,
then customHeaders spread over them (a list value becomes one comma-joined header); `max_tokens` 64000;
extended thinking only when the model table says `reasoning = true` (budget `reasoningBudget`, off at 0),
and then tool_choice auto (the API refuses "any" with thinking); prompt-cache marks on the system prompt
and the last tool; tool results without a matching tool_use in the assistant turn before them are left
out (the API refuses them); no video. Retries, key rotation on 429, the tool_choice and streaming
fallbacks and every failure are the shared loop's (httpcall.HttpProvider.complete): only the wire
format differs, so only it is here. Unlike the original (one JSON answer) the reply streams.

Thinking blocks come back with their `signature` (and redacted ones with their `data`) and are kept in
the assistant message in reply order, as the original stores them, because the API wants them back
unchanged in the next request of a tool-using turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config.engine_config import ModelConfig
from ..sessions.messages import assistant_message
from .httpcall import Growing, HttpProvider, ReplyReader, describe, excerpt
from .openai import MAX_CALLS, _dumps, is_index, tool_call_part, wants_auto_tool_choice
from .replytypes import ContentFiltered, MalformedReply, ModelReply, ModelRequest, NoToolCalls, ProviderError

MAX_TOKENS = 64000
VERSION = "2023-06-01"
BETA = "oauth-2025-04-20,interleaved-thinking-2025-05-14"


# -- the request body -------------------------------------------------------------------------
def _user_blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict] = []
    for part in content or ():
        kind = part.get("type")
        if kind == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif kind == "image":
            source = {"type": "base64", "media_type": part.get("mediaType", "image/png"), "data": part.get("data", "")}
            blocks.append({"type": "image", "source": source})
        # video: the Messages API has none (the original drops it too)
    return blocks


def _assistant_blocks(content: Any) -> list[dict]:
    blocks: list[dict] = []
    for part in content or ():
        kind = part.get("type")
        if kind == "thinking" and part.get("signature"):  # unsigned thinking (another kind's) is not accepted
            blocks.append({"type": "thinking", "thinking": part.get("thinking", ""), "signature": part["signature"]})
        elif kind == "redacted_thinking" and part.get("data"):
            blocks.append({"type": "redacted_thinking", "data": part["data"]})
        elif kind == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif kind == "toolCall":
            blocks.append(
                {"type": "tool_use", "id": part.get("id"), "name": part.get("name"), "input": part.get("input") or {}}
            )
    return blocks


def translate_messages(messages: list[dict]) -> list[dict]:
    """Runtime messages as Messages-API turns: tool results are user turns, adjacent same-role turns merge."""
    out: list[dict] = []
    tool_use_ids: set[str] = set()  # of the last assistant turn: a tool_result must answer one of them
    for message in messages:
        role = message.get("role")
        if role == "user":
            turn, blocks = "user", _user_blocks(message.get("content"))
        elif role == "system":  # no system role inside the conversation: sent as the user's text
            text = message.get("content") if isinstance(message.get("content"), str) else ""
            turn, blocks = "user", ([{"type": "text", "text": text}] if text else [])
        elif role == "toolResponse":
            if message.get("toolCallId") not in tool_use_ids:
                continue
            output, name = message.get("output"), message.get("name")
            payload = {"name": name, **output} if isinstance(output, dict) else {"name": name, "output": output}
            result = {"type": "tool_result", "tool_use_id": message.get("toolCallId"), "content": _dumps(payload)}
            turn, blocks = "user", [result]
        elif role == "assistant":
            turn, blocks = "assistant", _assistant_blocks(message.get("content"))
            tool_use_ids = {b["id"] for b in blocks if b["type"] == "tool_use"}
        else:
            continue
        if not blocks:
            continue
        if out and out[-1]["role"] == turn:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": turn, "content": list(blocks)})
    return out


def build_anthropic_body(provider: Any, model_cfg: ModelConfig, request: ModelRequest, *, stream: bool) -> dict:
    thinking = model_cfg.reasoning is True and model_cfg.reasoning_budget > 0
    auto = request.tool_choice == "auto" or wants_auto_tool_choice(provider, request.model) or thinking
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": MAX_TOKENS,
        "system": [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}],
        "messages": translate_messages(request.messages),
    }
    if request.tools:
        body["tools"] = [
            {  # keys in the original CireilClaw's order, so the bytes match
                "description": t.get("description", ""),
                "input_schema": t.get("parameters") or {"type": "object", "properties": {}},
                "name": t["name"],
            }
            for t in request.tools
        ]
        body["tools"][-1]["cache_control"] = {"type": "ephemeral"}
        body["tool_choice"] = {"type": "auto" if auto else "any"}
    if thinking:
        body["thinking"] = {"type": "enabled", "budget_tokens": model_cfg.reasoning_budget}
    if stream:
        body["stream"] = True
    return body


# -- the reply --------------------------------------------------------------------------------
_GROWING = ("text", "thinking", "signature", "json")  # the parts of a block that arrive in pieces


def _text_of(block: dict, key: str) -> str:
    value = block.get(key)
    return value.text if isinstance(value, Growing) else ""


@dataclass
class _Blocks(ReplyReader):
    """The reply's content blocks as they arrive, from one JSON body or from stream events."""

    on_delta: Callable[[dict], None] | None
    blocks: dict[int, dict] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: dict = field(default_factory=dict)
    done: bool = False

    def _usage(self, raw: Any) -> None:
        if raw is None:
            return
        counts = self.clean_usage(raw)
        for source, target in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
            if source in counts:
                self.usage[target] = counts[source]
        self.usage["total_tokens"] = self.usage.get("prompt_tokens", 0) + self.usage.get("completion_tokens", 0)

    def _block(self, index: Any, kind: Any = None) -> dict:
        if not is_index(index):
            raise MalformedReply(f"a content block's index is {describe(index)}, not a whole number >= 0")
        block = self.blocks.get(index)
        if block is None:
            if len(self.blocks) >= MAX_CALLS:
                raise MalformedReply(f"more than {MAX_CALLS} content blocks in one reply")
            block = self.blocks[index] = {"type": kind, **{key: Growing() for key in _GROWING}}
        return block

    def start(self, index: Any, block: dict) -> None:
        kind = block.get("type")
        if not isinstance(kind, str):
            raise MalformedReply(f"a content block's type is {describe(kind)}, not a string")
        entry = self._block(index, kind)
        entry["type"] = kind
        for key, value in block.items():
            if key in _GROWING:
                if isinstance(value, str) and value:
                    entry[key] = Growing(self._spend(value))
            elif key not in ("type", "input"):
                entry[key] = value
        if kind == "tool_use":
            entry["json"] = Growing(self._spend(_dumps(block["input"])) if block.get("input") else "")
            if not isinstance(entry.get("name", ""), str):
                raise MalformedReply(f"a tool_use block's name is {describe(entry['name'])}, not a string")
            self._emit_call(index)
        for key in ("text", "thinking"):
            if kind == key and entry[key].length:
                self._emit({"type": key, "text": entry[key].text})

    def _emit_call(self, index: int) -> None:
        b = self.blocks[index]
        arguments = b["json"].text
        self._emit(
            {"type": "toolCall", "index": index, "id": b.get("id"), "name": b.get("name", ""), "arguments": arguments}
        )

    def delta(self, index: Any, delta: dict) -> None:
        block = self._block(index)
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            block["type"] = block["type"] or "text"
            block["text"].add(self._spend(delta["text"]))
            self._emit({"type": "text", "text": delta["text"]})
        elif kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block["thinking"].add(self._spend(delta["thinking"]))
            self._emit({"type": "thinking", "text": delta["thinking"]})
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block["signature"].add(self._spend(delta["signature"]))
        elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block["json"].add(self._spend(delta["partial_json"]))
            if block["json"].due():
                self._emit_call(index)

    def event(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == "message_start":
            message = data.get("message")
            self._usage(message.get("usage") if isinstance(message, dict) else None)
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            self.start(data.get("index", len(self.blocks)), data["content_block"])
        elif kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            self.delta(data.get("index", 0), data["delta"])
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            if not isinstance(delta, dict):
                raise MalformedReply(f"a message_delta's delta is {describe(delta)}, not an object")
            reason = delta.get("stop_reason")
            if reason is not None and not isinstance(reason, str):
                raise MalformedReply(f"'stop_reason' is {describe(reason)}, not a string")
            self.stop_reason = (reason or "")[:100] or self.stop_reason
            self._usage(data.get("usage"))
        elif kind == "message_stop":
            self.done = True  # the end marker: the rest of the stream is only drained
        elif kind == "error":
            error = data.get("error") or {}
            message = error.get("message") if isinstance(error, dict) else error
            message = excerpt(message if isinstance(message, str) else str(message)[:4000])
            raise ProviderError(f"the server reported an error: {message}", server_message=message)

    def body(self, data: Any) -> None:  # type: ignore[override]
        if not isinstance(data, dict) or data.get("type") == "error":
            if isinstance(data, dict):
                self.event(data)
            raise MalformedReply(f"a message is {describe(data)}, not an object")
        content = data.get("content") or ()
        if not isinstance(content, list):
            raise MalformedReply(f"'content' is {describe(content)}, not a list")
        for index, block in enumerate(content):
            if isinstance(block, dict):
                self.start(index, block)
        reason = data.get("stop_reason")
        if reason is not None and not isinstance(reason, str):
            raise MalformedReply(f"'stop_reason' is {describe(reason)}, not a string")
        self.stop_reason = reason
        self._usage(data.get("usage"))
        self.done = True

    def finish(self, request_body: dict) -> ModelReply:
        reason = self.stop_reason or "(none)"
        if reason == "refusal":
            raise ContentFiltered("the provider refused to answer (stop_reason refusal)")
        ordered = [self.blocks[i] for i in sorted(self.blocks)]
        calls = [b for b in ordered if b["type"] == "tool_use"]
        for index in sorted(self.blocks):  # a live view shown only part of long arguments sees them whole
            if self.blocks[index]["type"] == "tool_use" and self.blocks[index]["json"].unshown:
                self._emit_call(index)
        if not calls:
            raise NoToolCalls(
                f"the model answered without calling a tool (stop_reason {reason})",
                text="".join(_text_of(b, "text") for b in ordered if b["type"] == "text"),
                thinking="".join(_text_of(b, "thinking") for b in ordered if b["type"] == "thinking"),
                finish_reason=reason,
                usage=self.usage,
            )
        parts: list[dict] = []
        for block in ordered:
            thinking, signature = _text_of(block, "thinking"), _text_of(block, "signature")
            if block["type"] == "thinking" and (thinking or signature):
                part = {"type": "thinking", "thinking": thinking}
                if signature:
                    part["signature"] = signature
                parts.append(part)
            elif block["type"] == "redacted_thinking" and isinstance(block.get("data"), str) and block["data"]:
                parts.append({"type": "redacted_thinking", "data": block["data"]})
        for block in calls:
            parts.append(tool_call_part(block.get("id"), block.get("name", ""), block["json"].text, id_prefix="toolu_"))
        return ModelReply(assistant_message(parts), self.usage, reason, request_body)


# -- the provider -----------------------------------------------------------------------------
class AnthropicProvider(HttpProvider):
    """The shared retries and key pool, speaking the Messages API."""

    path = "/messages"

    def _body(self, model_cfg: ModelConfig, request: ModelRequest) -> dict:
        return build_anthropic_body(self.provider, model_cfg, request, stream=self._stream)

    def _encode(self, body: dict) -> bytes:
        return json.dumps(body, ensure_ascii=False).encode()

    def _reader(self, on_delta: Callable[[dict], None] | None) -> ReplyReader:
        return _Blocks(on_delta)

    def _headers(self, auth: Any) -> list[tuple[str, str]]:
        # the original spreads customHeaders into a plain object over the built-ins: later wins, a list is joined
        headers: dict[str, str] = {
            "content-type": "application/json",
            "authorization": f"Bearer {self._api_key(auth)}",
            "anthropic-version": VERSION,
            "anthropic-beta": BETA,
        }
        names = {"content-type": "Content-Type", "authorization": "Authorization"}
        for name, value in self.provider.custom_headers.items():
            if name.lower() == "content-type":
                continue  # the body is JSON whatever the table says
            headers[name.lower()] = ",".join(value) if isinstance(value, list) else value
            names.setdefault(name.lower(), name)
        return [(names.get(k, k), v) for k, v in headers.items()]
