"""The model provider: one OpenAI-compatible chat-completions call per model turn (reference §8.4).

Streams by default (the notebook shows thinking, tool calls and a respond's text as they arrive);
falls back to a plain JSON request when a backend refuses streaming. A provider with useJpegForImages gets
every picture as JPEG (converted once and remembered, runtime/imaging.py). Not done here, unlike upstream:
switching to JPEG on its own when a backend rejects WebP.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..config.engine_config import MissingApiKey, ModelConfig, ProviderConfig
from ..errors import CireilError
from ..jsonbound import loads as bounded_loads  # a depth bomb from a provider is a ValueError
from ..mcp.sse import SseParser
from ..messages import assistant_message
from .keypool import AllKeysRateLimited, KeyPools
from .tooldefs import encode_body, tool_definition

_DRAIN_GRACE_S = 1.0
TIMEOUT_S = 600.0
_CONNECT_TIMEOUT_S = 30.0
_MAX_ERROR_TEXT = 2000
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
BASE_HEADERS = {
    "HTTP-Referer": "https://github.com/CutieZone/CireilClaw",
    "X-OpenRouter-Title": "CireilClaw",
    "X-OpenRouter-Categories": "personal-agent,cli-agent",
}
TOOL_USE_REMINDER = (
    "You must answer by calling one of the provided tools. Plain text is not delivered to anyone: "
    "to talk to the user, call the respond tool."
)
# A backslash starting a valid JSON escape is kept (consumed in pairs so `\\d` stays `\\d`); any other is doubled.
_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})|\\')


@dataclass
class ModelRequest:
    system: str  # the system prompt
    messages: list[dict]  # runtime.messages dicts, already shaped (user / assistant / toolResponse / system)
    tools: list[dict]  # [{"name", "description", "parameters": JSON Schema}]
    session_id: str  # sent as prompt_cache_key
    model: str
    tool_choice: str = "required"


@dataclass
class ModelReply:
    message: dict  # an assistant message: thinking parts + toolCall parts
    usage: dict  # as the server gave it ({} if none)
    finish_reason: str
    request_body: dict  # exactly what was POSTed last


class ProviderError(CireilError):
    """The model call failed; the message says what happened (HTTP status and the server's message)."""

    def __init__(self, message: str, *, status: int | None = None, server_message: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.server_message = server_message
        self.request_body: dict = {}


class NoToolCalls(ProviderError):
    """The model answered without calling a tool. `.text` is its stray text, `.thinking` its reasoning."""

    def __init__(self, message: str, *, text: str, thinking: str, finish_reason: str, usage: dict) -> None:
        super().__init__(message)
        self.text = text
        self.thinking = thinking
        self.finish_reason = finish_reason
        self.usage = usage


class ContentFiltered(ProviderError):
    """The provider's content filter stopped the reply; retrying the same request would not help."""


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


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
            from ..imaging import ImageConversionError, as_jpeg

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


def _error_message(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    try:
        data = bounded_loads(text)
    except ValueError:
        return text.strip()[:_MAX_ERROR_TEXT] or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
    return text[:_MAX_ERROR_TEXT]


@dataclass
class _Accumulator:
    """The reply as it is assembled, from one JSON body or from stream deltas."""

    on_delta: Callable[[dict], None] | None
    text: str = ""
    thinking: str = ""
    calls: dict[int, dict] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict = field(default_factory=dict)

    def _emit(self, event: dict) -> None:
        if self.on_delta is not None:
            self.on_delta(event)

    def add_text(self, text: Any) -> None:
        if isinstance(text, str) and text:
            self.text += text
            self._emit({"type": "text", "text": text})

    def add_thinking(self, text: Any) -> None:
        if isinstance(text, str) and text:
            self.thinking += text
            self._emit({"type": "thinking", "text": text})

    def add_call(self, position: int, delta: dict) -> None:
        index = delta.get("index", position)
        call = self.calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
        if delta.get("id"):
            call["id"] = delta["id"]
        function = delta.get("function") or {}
        name = function.get("name")
        # OpenAI sends the name once; a few servers repeat it in every chunk, others split it
        if isinstance(name, str) and name and name != call["name"]:
            call["name"] += name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send an object instead of a JSON string
            arguments = _dumps(arguments)
        if isinstance(arguments, str):
            call["arguments"] += arguments
        self._emit(
            {"type": "toolCall", "index": index, "id": call["id"], "name": call["name"], "arguments": call["arguments"]}
        )

    def add_choice(self, choice: dict, *, key: str) -> None:
        delta = choice.get(key) or {}
        self.add_thinking(delta.get("reasoning_content") or delta.get("reasoning"))
        self.add_text(delta.get("content"))
        for position, call in enumerate(delta.get("tool_calls") or ()):
            if isinstance(call, dict):
                self.add_call(position, call)
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]

    def add_body(self, data: Any, *, key: str) -> None:
        if not isinstance(data, dict):
            raise ProviderError(f"the server sent something that is not a completion: {str(data)[:200]}")
        if data.get("error"):
            error = data["error"]
            message = error.get("message") if isinstance(error, dict) else str(error)
            raise ProviderError(f"the server reported an error: {message}", server_message=message)
        if isinstance(data.get("usage"), dict):
            self.usage = data["usage"]
        for choice in (data.get("choices") or [])[:1]:
            if isinstance(choice, dict):
                self.add_choice(choice, key=key)

    def finish(self, body: dict) -> ModelReply:
        reason = self.finish_reason or "(none)"
        if reason == "content_filter":
            raise ContentFiltered("the provider's content filter stopped the reply (finish_reason content_filter)")
        # Tool calls count whatever the finish reason: llama.cpp, Ollama and others send them with "stop"
        # (upstream demands "tool_calls" and would retry such replies until the turn fails)
        if not self.calls:
            what = "without calling a tool"
            raise NoToolCalls(
                f"the model answered {what} (finish_reason {reason})",
                text=self.text,
                thinking=self.thinking,
                finish_reason=reason,
                usage=self.usage,
            )
        parts: list[dict] = []
        if self.thinking:
            parts.append({"type": "thinking", "thinking": self.thinking})
        for index in sorted(self.calls):
            call = self.calls[index]
            arguments, raw = parse_arguments(call["arguments"])
            part = {"type": "toolCall", "id": call["id"] or f"call_{secrets.token_hex(12)}", "name": call["name"]}
            part["input"] = arguments
            if raw is not None:
                part["rawArguments"] = raw
            parts.append(part)
        return ModelReply(assistant_message(parts), self.usage, reason, body)


# -- the provider -----------------------------------------------------------------------------
class OpenAIProvider:
    """Calls one provider for one model; remembers what the backend refused (tool_choice, streaming)."""

    def __init__(
        self,
        provider: ProviderConfig,
        model: str,
        *,
        client: httpx.AsyncClient | None = None,
        model_cfg: ModelConfig | None = None,
        pools: KeyPools | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        # the model table the turn chose (§2.9: it may be the default provider's); None = this provider's own
        self.model_cfg = model_cfg
        self._client = client
        self._owns_client = client is None
        self._pool = (pools or KeyPools()).get(provider.api_keys)
        self._auto_tool_choice = False  # a 400 about tool_choice switched this provider to "auto"
        self._stream = True  # a 400 about streaming switched this provider to plain JSON
        self.last_request_body: dict = {}
        self._translations = TranslationCache()

    @property
    def url(self) -> str:
        return self.provider.api_base.rstrip("/") + "/chat/completions"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # created on first use, inside the runtime's event loop; no redirects: they would carry the key elsewhere
            # a local server is reached directly: a proxy from the environment would not know 127.0.0.1
            host = urlsplit(self.provider.api_base).hostname or ""
            from ..netbackend import fast_transport

            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(TIMEOUT_S, connect=_CONNECT_TIMEOUT_S),
                follow_redirects=False,
                trust_env=host not in _LOOPBACK,
                transport=fast_transport(),  # proxies from the environment still apply (as httpx mounts)
            )
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client this provider made (a client passed in belongs to the caller)."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def _headers(self, key: str) -> list[tuple[str, str]]:
        """Built-in headers, then customHeaders, which replace a built-in of the same name; a list value
        is sent as one header line per element (upstream-formats.md §2.6)."""
        # Content-Type stays: the body is JSON whatever the table says (the original's SDK sets it last too)
        custom = {n: v for n, v in self.provider.custom_headers.items() if n.lower() != "content-type"}
        overridden = {name.lower() for name in custom}
        builtin = {"Authorization": f"Bearer {key}", **BASE_HEADERS}
        out = [("Content-Type", "application/json")]
        out += [(name, value) for name, value in builtin.items() if name.lower() not in overridden]
        for name, value in custom.items():
            out += [(name, v) for v in value] if isinstance(value, list) else [(name, value)]
        return out

    def _api_key(self, index: int) -> str:
        try:
            return self.provider.api_keys[index].resolve()
        except MissingApiKey as exc:
            raise ProviderError(f"provider '{self.provider.name}': {exc}") from None

    def _take_key(self) -> int:
        try:
            return self._pool.take()
        except AllKeysRateLimited as exc:
            raise ProviderError(f"provider '{self.provider.name}': {exc}", status=429) from None

    async def complete(self, request: ModelRequest, *, on_delta: Callable[[dict], None] | None = None) -> ModelReply:
        request = replace(request, model=request.model or self.model)
        if self.model_cfg is not None and request.model == self.model:
            model_cfg = self.model_cfg
        else:
            model_cfg = self.provider.model_config(request.model)
        tried: set[int] = set()
        switched_tool_choice = False
        index = self._take_key()
        while True:
            sent = replace(request, tool_choice="auto") if self._auto_tool_choice else request
            body = self._body(model_cfg, sent)
            self.last_request_body = body
            try:
                return await self._post(body, self._api_key(index), on_delta)
            except _HttpError as err:
                lower = err.message.lower()
                if err.status == 429:
                    self._pool.bench(index)
                    tried.add(index)
                    count = len(self.provider.api_keys)
                    if len(tried) >= count or not self._pool.available:
                        keys = "the only API key" if count == 1 else f"all {count} API keys"
                        raise self._error(f"rate limited (HTTP 429) on {keys}: {err.message}", err, body) from None
                    index = self._take_key()
                    continue
                refused_choice = err.status == 400 and "tool_choice" in lower and not switched_tool_choice
                if refused_choice and body.get("tool_choice") not in (None, "auto"):
                    self._auto_tool_choice = switched_tool_choice = True
                    continue
                if err.status == 400 and self._stream and "stream" in lower:
                    self._stream = False
                    continue
                raise self._error(f"HTTP {err.status} from {self.url}: {err.message}", err, body) from None
            except ProviderError as exc:  # a reply came but was unusable: the next request takes this key again
                self._pool.reuse(index)
                exc.request_body = body
                raise
            except httpx.TimeoutException as exc:
                raise self._error(f"no answer from {self.url} in time ({type(exc).__name__})", None, body) from None
            except httpx.HTTPError as exc:
                raise self._error(f"could not talk to {self.url}: {exc or type(exc).__name__}", None, body) from None

    def _body(self, model_cfg: ModelConfig, request: ModelRequest) -> dict:
        """The request body in this kind's wire format (another kind's module overrides it)."""
        return build_request_body(self.provider, model_cfg, request, stream=self._stream, cache=self._translations)

    def _error(self, message: str, err: _HttpError | None, body: dict) -> ProviderError:
        exc = ProviderError(
            f"provider '{self.provider.name}': {message}",
            status=err.status if err else None,
            server_message=err.message if err else None,
        )
        exc.request_body = body
        return exc

    async def _post(self, body: dict, key: str, on_delta: Callable[[dict], None] | None) -> ModelReply:
        data = encode_body(body)
        acc = _Accumulator(on_delta)
        # leaving this block, also by cancellation, closes the response (and its connection if unread)
        async with self._http().stream("POST", self.url, content=data, headers=self._headers(key)) as response:
            if response.status_code >= 400:
                raise _HttpError(response.status_code, _error_message(await response.aread()))
            if "text/event-stream" in response.headers.get("content-type", ""):
                await self._read_events(response, acc)
            else:
                raw = await response.aread()
                try:
                    payload = bounded_loads(raw)
                except ValueError:
                    snippet = raw[:200].decode("utf-8", "replace")
                    raise ProviderError(
                        f"provider '{self.provider.name}': {self.url} answered HTTP {response.status_code} "
                        f"with something that is not JSON: {snippet!r}"
                    ) from None
                acc.add_body(payload, key="message")
        return acc.finish(body)

    async def _read_events(self, response: httpx.Response, acc: _Accumulator) -> None:
        parser = SseParser()
        done = False
        # After [DONE] the rest of the body (the chunked terminator) is still read, so that the connection
        # returns to the pool: left unread it is closed, and every step of a turn would pay a new TCP (and
        # TLS) handshake. A server that keeps streaming after [DONE] gets a short grace, then is cut off.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(None) as deadline:
                async for text in response.aiter_text():
                    if done:
                        continue
                    for event in parser.feed(text):
                        if event.data.strip() == "[DONE]":
                            done = True
                            deadline.reschedule(asyncio.get_running_loop().time() + _DRAIN_GRACE_S)
                            break
                        try:
                            chunk = bounded_loads(event.data)
                        except ValueError:
                            continue  # a keepalive or vendor comment in data form; not part of the reply
                        acc.add_body(chunk, key="delta")
        if done:
            return
        for event in parser.finish():
            if event.data.strip() == "[DONE]":
                return
            with contextlib.suppress(ValueError):
                acc.add_body(bounded_loads(event.data), key="delta")
        if acc.finish_reason is None:
            raise ProviderError(f"provider '{self.provider.name}': the stream ended before the reply was complete")
