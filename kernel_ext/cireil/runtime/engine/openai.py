"""The `openai` provider kind: one OpenAI-compatible chat-completions call per model turn (reference §8.4).

Streams by default (the notebook shows thinking, tool calls and a respond's text as they arrive);
falls back to a plain JSON request when a backend refuses streaming. A provider with useJpegForImages gets
every picture as JPEG (converted once and remembered, runtime/files/imaging.py). Not done here, unlike upstream:
switching to JPEG on its own when a backend rejects WebP.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..base.jsonbound import loads as bounded_loads  # a depth bomb from a provider is a ValueError
from ..config.engine_config import ModelConfig, ProviderConfig
from ..sessions.messages import assistant_message
from .httpcall import Growing, HttpProvider, ReplyReader, describe, excerpt
from .replytypes import ContentFiltered, MalformedReply, ModelReply, ModelRequest, NoToolCalls, ProviderError
from .tooldefs import tool_definition

__all__ = [
    "ContentFiltered",
    "ModelReply",
    "ModelRequest",
    "NoToolCalls",
    "OpenAIProvider",
    "ProviderError",
    "build_request_body",
    "parse_arguments",
    "translate_message",
]

BASE_HEADERS = {
    "HTTP-Referer": "https://github.com/CutieZone/CireilClaw",
    "X-OpenRouter-Title": "CireilClaw",
    "X-OpenRouter-Categories": "personal-agent,cli-agent",
}
TOOL_USE_REMINDER = (
    "You must answer by calling one of the provided tools. Plain text is not delivered to anyone: "
    "to talk to the user, call the respond tool."
)
MAX_NAME = 256  # characters of a tool call's name (the APIs allow 64): a name growing past it is no name
MAX_CALLS = 1024  # tool calls in one reply
# A backslash starting a valid JSON escape is kept (consumed in pairs so `\\d` stays `\\d`); any other is doubled.
_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})|\\')


# -- the request body -------------------------------------------------------------------------
def wants_auto_tool_choice(provider: ProviderConfig, model: str) -> bool:
    """Backends known to reject tool_choice "required" get "auto" plus a reminder (reference §8.4)."""
    lower = model.lower()
    return provider.use_tool_choice_auto or ("kimi" in lower and ("2.5" in lower or "-for-code" in lower))


class TranslationCache:
    """Translated messages of the last request, reused by the next one of the same conversation.

    Each step of a turn re-sends the whole history, and translating it (a JSON dump per tool result)
    was most of the provider's own time. History shaping hands over the same dict for a message that
    did not change, so a translation is reused only for that very object: a changed copy (a pruned
    result) is translated again.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[dict, dict | None]] = {}

    def translate(self, messages: list[dict]) -> list[dict]:
        entries: dict[int, tuple[dict, dict | None]] = {}
        out = []
        for message in messages:
            hit = self._entries.get(id(message))
            translated = hit[1] if hit is not None and hit[0] is message else translate_message(message)
            entries[id(message)] = (message, translated)  # holding the message keeps its id from being reused
            if translated is not None:
                out.append(translated)
        self._entries = entries
        return out


def build_request_body(
    provider: ProviderConfig,
    model_cfg: ModelConfig,
    request: ModelRequest,
    *,
    stream: bool,
    cache: TranslationCache | None = None,
) -> dict:
    """What would be POSTed for `request` (pure: `%cireil prompt` shows it)."""
    auto = request.tool_choice == "auto" or wants_auto_tool_choice(provider, request.model)
    messages = [{"role": "system", "content": request.system}]
    if cache is not None:
        messages += cache.translate(request.messages)
    else:
        messages += [m for m in map(translate_message, request.messages) if m is not None]
    if provider.use_jpeg_for_images:  # engine.toml useJpegForImages (reference §8.4)
        messages = [_jpeg_images(m) for m in messages]
    if auto and request.tools:
        messages.append({"role": "system", "content": TOOL_USE_REMINDER})
    body: dict[str, Any] = {"messages": messages, "model": request.model, "prompt_cache_key": request.session_id}
    if request.tools:
        body["tool_choice"] = "auto" if auto else request.tool_choice
        body["tools"] = [tool_definition(t) for t in request.tools]
    if model_cfg.reasoning is True:
        body["reasoning"] = {"enabled": True}
    elif isinstance(model_cfg.reasoning, str):
        body["reasoning"] = {"effort": model_cfg.reasoning}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _dumps(value: Any) -> str:
    # as JSON.stringify writes it upstream: compact, non-ASCII kept
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _data_url(part: dict) -> str:
    return f"data:{part.get('mediaType', 'application/octet-stream')};base64,{part.get('data', '')}"


def _jpeg_images(message: dict) -> dict:
    """A translated user message with every picture as JPEG; the message itself when it has none to change."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return message
    parts, changed = [], False
    for part in content:
        url = part.get("image_url", {}).get("url", "") if part.get("type") == "image_url" else ""
        head, _, data = url.partition(";base64,")
        if head.startswith("data:image/") and head != "data:image/jpeg" and data:
            from ..files.imaging import ImageConversionError, as_jpeg

            try:
                jpeg = as_jpeg(base64.b64decode(data), head[len("data:") :])
            except ImageConversionError:  # undecodable: send it as it is and let the backend say what it thinks
                parts.append(part)
                continue
            part = {**part, "image_url": {**part["image_url"], "url": _data_url_of(jpeg)}}
            changed = True
        parts.append(part)
    return {**message, "content": parts} if changed else message


def _data_url_of(jpeg: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def translate_message(message: dict) -> dict | None:
    """One runtime message in the chat-completions shape (reference §8.4 table); None for what is not sent."""
    role = message.get("role")
    content = message.get("content")
    if role == "system":
        return {"role": "system", "content": content if isinstance(content, str) else ""}
    if role == "user":
        if isinstance(content, str):
            return {"role": "user", "content": [{"type": "text", "text": content}]}
        parts: list[dict] = []
        for part in content or ():
            kind = part.get("type")
            if kind == "text":
                parts.append({"type": "text", "text": part.get("text", "")})
            elif kind == "image":
                parts.append({"type": "image_url", "image_url": {"url": _data_url(part)}})
            elif kind == "video":
                parts.append({"type": "video_url", "video_url": {"url": _data_url(part)}, "fps": 10})
        return {"role": "user", "content": parts}
    if role == "toolResponse":
        output = message.get("output")
        name = message.get("name")
        payload = {"name": name, **output} if isinstance(output, dict) else {"name": name, "output": output}
        return {"role": "tool", "tool_call_id": message.get("toolCallId"), "content": _dumps(payload)}
    if role == "assistant":
        parts = list(content or ())
        sent: dict[str, Any] = {"role": "assistant"}
        thinking = [p.get("thinking", "") for p in parts if p.get("type") == "thinking" and p.get("thinking")]
        if thinking:
            sent["reasoning_content"] = "\n\n".join(thinking)
        calls = [p for p in parts if p.get("type") == "toolCall"]
        if calls:
            # calls whose arguments were not JSON go back as {}: some backends re-parse history arguments
            sent["tool_calls"] = [
                {
                    "id": c.get("id"),
                    "type": "function",
                    "function": {"name": c.get("name"), "arguments": _dumps(c.get("input") or {})},
                }
                for c in calls
            ]
        texts = [{"type": "text", "text": p["text"]} for p in parts if p.get("type") == "text" and p.get("text")]
        if texts:
            sent["content"] = texts
        elif not calls:
            sent["content"] = ""  # an assistant message needs content or tool calls
        return sent
    return None


# -- the reply --------------------------------------------------------------------------------
def parse_arguments(raw: str | None) -> tuple[dict, str | None]:
    """Tool-call arguments as a dict; when they cannot be read, ({}, the raw text) for a validation error."""
    text = raw or ""
    if not text.strip():
        return {}, None
    for candidate in (text, _ESCAPE.sub(lambda m: m.group(0) if m.group(1) else "\\\\", text)):
        try:
            value = bounded_loads(candidate)
        except ValueError:
            continue
        return (value, None) if isinstance(value, dict) else ({}, text)
    return {}, text


def tool_call_part(call_id: Any, name: Any, raw: str | None, *, id_prefix: str = "call_") -> dict:
    """A reply's toolCall part: its arguments read (kept raw when unreadable, for the validation error the model
    then gets), a fresh id when the provider sent none."""
    if not isinstance(name, str):
        raise MalformedReply(f"a tool call's name is {describe(name)}, not a string")
    if call_id is not None and not isinstance(call_id, str):
        raise MalformedReply(f"a tool call's id is {describe(call_id)}, not a string")
    arguments, unread = parse_arguments(raw)
    part = {"type": "toolCall", "id": call_id or f"{id_prefix}{secrets.token_hex(12)}", "name": name}
    part["input"] = arguments
    if unread is not None:
        part["rawArguments"] = unread
    return part


def call_name(name: str, piece: str) -> str:
    """A streamed name with one more piece (some servers repeat the whole name in every chunk, others split it)."""
    if not piece or piece == name:
        return name
    if len(name) + len(piece) > MAX_NAME:
        raise MalformedReply(f"a tool call's name is longer than {MAX_NAME} characters")
    return name + piece


def is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


@dataclass
class _Accumulator(ReplyReader):
    """The reply as it is assembled, from one JSON body or from stream deltas."""

    on_delta: Callable[[dict], None] | None
    text: Growing = field(default_factory=Growing)
    thinking: Growing = field(default_factory=Growing)
    calls: dict[int, dict] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict = field(default_factory=dict)

    def add_text(self, text: Any) -> None:
        if isinstance(text, str) and text:
            self.text.add(self._spend(text))
            self._emit({"type": "text", "text": text})

    def add_thinking(self, text: Any) -> None:
        if isinstance(text, str) and text:
            self.thinking.add(self._spend(text))
            self._emit({"type": "thinking", "text": text})

    def _emit_call(self, index: int, call: dict) -> None:
        event = {"type": "toolCall", "index": index, "id": call["id"], "name": call["name"]}
        self._emit({**event, "arguments": call["arguments"].text})

    def add_call(self, position: int, delta: dict) -> None:
        index = delta.get("index", position)
        if not is_index(index):
            raise MalformedReply(f"a tool call's index is {describe(index)}, not a whole number >= 0")
        call = self.calls.get(index)
        if call is None:
            if len(self.calls) >= MAX_CALLS:
                raise MalformedReply(f"more than {MAX_CALLS} tool calls in one reply")
            call = self.calls[index] = {"id": None, "name": "", "arguments": Growing()}
        ident = delta.get("id")
        if ident:
            if not isinstance(ident, str):
                raise MalformedReply(f"a tool call's id is {describe(ident)}, not a string")
            call["id"] = ident[:MAX_NAME]
        function = delta.get("function") or {}
        if not isinstance(function, dict):
            raise MalformedReply(f"a tool call's 'function' is {describe(function)}, not an object")
        name = function.get("name")
        if name is not None and not isinstance(name, str):
            raise MalformedReply(f"a tool call's name is {describe(name)}, not a string")
        call["name"] = call_name(call["name"], name or "")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send an object instead of a JSON string
            arguments = _dumps(arguments)
        elif arguments is not None and not isinstance(arguments, str):
            raise MalformedReply(f"a tool call's arguments are {describe(arguments)}, not a string")
        if arguments:
            call["arguments"].add(self._spend(arguments))
        if call["arguments"].due():
            self._emit_call(index, call)

    def add_choice(self, choice: dict, *, key: str) -> None:
        delta = choice.get(key) or {}
        if not isinstance(delta, dict):
            raise MalformedReply(f"a choice's '{key}' is {describe(delta)}, not an object")
        self.add_thinking(delta.get("reasoning_content") or delta.get("reasoning"))
        self.add_text(delta.get("content"))
        calls = delta.get("tool_calls") or ()
        if not isinstance(calls, list | tuple):
            raise MalformedReply(f"'tool_calls' is {describe(calls)}, not a list")
        for position, call in enumerate(calls):
            if not isinstance(call, dict):
                raise MalformedReply(f"a tool call is {describe(call)}, not an object")
            self.add_call(position, call)
        reason = choice.get("finish_reason")
        if reason:
            if not isinstance(reason, str):
                raise MalformedReply(f"'finish_reason' is {describe(reason)}, not a string")
            self.finish_reason = reason[:100]

    def add_body(self, data: Any, *, key: str) -> None:
        if not isinstance(data, dict):
            raise MalformedReply(f"a completion is {describe(data)}, not an object")
        if data.get("error"):
            error = data["error"]
            message = error.get("message") if isinstance(error, dict) else error
            message = excerpt(message if isinstance(message, str) else str(message)[:4000])
            raise ProviderError(f"the server reported an error: {message}", server_message=message)
        if data.get("usage") is not None:
            self.usage = self.clean_usage(data["usage"])
        choices = data.get("choices")
        if choices is None:
            return
        if not isinstance(choices, list):
            raise MalformedReply(f"'choices' is {describe(choices)}, not a list")
        for choice in choices[:1]:
            if not isinstance(choice, dict):
                raise MalformedReply(f"a choice is {describe(choice)}, not an object")
            self.add_choice(choice, key=key)

    def event(self, data: Any) -> None:
        self.add_body(data, key="delta")

    def body(self, data: Any) -> None:
        self.add_body(data, key="message")

    def cut_short(self) -> bool:
        return not self.done and self.finish_reason is None  # [DONE] is optional once the finish reason came

    def finish(self, body: dict) -> ModelReply:
        reason = self.finish_reason or "(none)"
        if reason == "content_filter":
            raise ContentFiltered("the provider's content filter stopped the reply (finish_reason content_filter)")
        for index in sorted(self.calls):  # a live view shown only part of long arguments sees them whole
            if self.calls[index]["arguments"].unshown:
                self._emit_call(index, self.calls[index])
        # Tool calls count whatever the finish reason: llama.cpp, Ollama and others send them with "stop"
        # (upstream demands "tool_calls" and would retry such replies until the turn fails)
        if not self.calls:
            what = "without calling a tool"
            raise NoToolCalls(
                f"the model answered {what} (finish_reason {reason})",
                text=self.text.text,
                thinking=self.thinking.text,
                finish_reason=reason,
                usage=self.usage,
            )
        parts: list[dict] = []
        if self.thinking.length:
            parts.append({"type": "thinking", "thinking": self.thinking.text})
        for index in sorted(self.calls):
            call = self.calls[index]
            parts.append(tool_call_part(call["id"], call["name"], call["arguments"].text))
        return ModelReply(assistant_message(parts), self.usage, reason, body)


# -- the provider -----------------------------------------------------------------------------
class OpenAIProvider(HttpProvider):
    """kind = "openai": chat completions, with the shared retries and key pool (httpcall.py)."""

    path = "/chat/completions"

    def __init__(self, provider: ProviderConfig, model: str, **kw: Any) -> None:
        super().__init__(provider, model, **kw)
        self._translations = TranslationCache()

    def _headers(self, auth: Any) -> list[tuple[str, str]]:
        """Built-in headers, then customHeaders, which replace a built-in of the same name; a list value
        is sent as one header line per element (upstream-formats.md §2.6)."""
        key = self._api_key(auth)
        # Content-Type stays: the body is JSON whatever the table says (the original's SDK sets it last too)
        custom = {n: v for n, v in self.provider.custom_headers.items() if n.lower() != "content-type"}
        overridden = {name.lower() for name in custom}
        builtin = {"Authorization": f"Bearer {key}", **BASE_HEADERS}
        out = [("Content-Type", "application/json")]
        out += [(name, value) for name, value in builtin.items() if name.lower() not in overridden]
        for name, value in custom.items():
            out += [(name, v) for v in value] if isinstance(value, list) else [(name, value)]
        return out

    def _body(self, model_cfg: ModelConfig, request: ModelRequest) -> dict:
        return build_request_body(self.provider, model_cfg, request, stream=self._stream, cache=self._translations)

    def _reader(self, on_delta: Callable[[dict], None] | None) -> ReplyReader:
        return _Accumulator(on_delta)
