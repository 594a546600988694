"""kind = "openai-codex": the Responses API of ChatGPT's Codex backend, `POST {apiBase}/codex/responses`, with the
user's OAuth login (codex_auth.py) instead of an API key, as the original's provider sends it (upstream-formats
§2.4): the system prompt as `instructions`, the history as `input` items, `store: false`, always `stream: true`,
encrypted reasoning asked back (`include: ["reasoning.encrypted_content"]`) and returned unchanged in the next
request, the model name normalized to the Codex list, `reasoning` mapped to an effort the model accepts.

Headers: the access token as Bearer, `chatgpt-account-id` from the token's claims, `OpenAI-Beta:
responses=experimental`, `originator: codex_cli_rs`, the session id as `session_id` and `conversation_id`, then
customHeaders (a string replaces a header, a list sends one line per element). A 401 refreshes the login once
and sends again; the shared loop (httpcall.py) does the rest. Differences from the original: the reply is read
as it streams (the notebook shows reasoning summaries, text and calls as they come), the summary is kept as a
`thinking` part beside the encrypted reasoning (the original keeps only the latter), and a video is left out
instead of failing the request.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.engine_config import ModelConfig, ProviderConfig
from ..sessions.messages import assistant_message
from . import codex_auth
from .httpcall import Growing, HttpError, HttpProvider, ReplyReader, describe, excerpt
from .openai import MAX_CALLS, _dumps, is_index, tool_call_part
from .replytypes import MalformedReply, ModelReply, ModelRequest, NoToolCalls, ProviderError

PATH = "/codex/responses"
OPENAI_BETA = "responses=experimental"
ORIGINATOR = "codex_cli_rs"
_USAGE_LIMIT = re.compile(r"usage_limit_reached|usage_not_included|rate_limit_exceeded|usage limit", re.I)

# -- model names and reasoning, as the original maps them -------------------------------------------
_FIXED = {
    "codex-mini-latest": "gpt-5.1-codex-mini",
    "gpt-5": "gpt-5.1",
    "gpt-5-codex": "gpt-5.1-codex",
    "gpt-5-codex-mini": "gpt-5.1-codex-mini",
    "gpt-5-codex-mini-high": "gpt-5.1-codex-mini",
    "gpt-5-codex-mini-medium": "gpt-5.1-codex-mini",
    "gpt-5-mini": "gpt-5.1",
    "gpt-5-nano": "gpt-5.1",
}
_VERSIONED = re.compile(r"^gpt-5\.([1-5])(?:-(codex(?:-(?:max|mini))?))?(?:-(?:none|low|medium|high|xhigh))?$")


def normalize_model(model: str) -> str:
    """The Codex model a configured name stands for (a provider prefix and an effort suffix dropped)."""
    if not model:
        return "gpt-5.1-codex"
    name = model.rsplit("/", 1)[-1]
    fixed = _FIXED.get(name) or _FIXED.get(name.lower())
    if fixed:
        return fixed
    lower = name.lower().replace(" ", "-")
    versioned = _VERSIONED.match(lower)
    if versioned:
        minor, family = versioned.groups()
        return f"gpt-5.{minor}-{family}" if family else f"gpt-5.{minor}"
    for needle, target in (
        ("codex-max", "gpt-5.1-codex-max"),
        ("codex-mini", "gpt-5.1-codex-mini"),
        ("codex", "gpt-5.1-codex"),
        ("gpt-5", "gpt-5.1"),
    ):
        if needle in lower:
            return target
    return name


def reasoning(model: str, configured: bool | str) -> dict:
    """`reasoning: {effort, summary}` for a normalized model: the configured effort, moved to one it takes."""
    lower = model.lower()
    mini = "codex-mini" in lower
    minor_match = re.match(r"^gpt-5\.(\d+)", lower)
    minor = int(minor_match.group(1)) if minor_match else None
    xhigh = (minor is not None and minor >= 2) or "codex-max" in lower
    none = "codex" not in lower and minor is not None and 1 <= minor <= 5
    if configured is False:
        effort = "none"
    elif isinstance(configured, str):
        effort = configured
    else:
        effort = "high" if xhigh and not mini else "medium"
    if mini and effort in ("none", "minimal", "low"):
        effort = "medium"
    if mini and effort == "xhigh":
        effort = "high"
    if not xhigh and effort == "xhigh":
        effort = "high"
    if not none and effort == "none":
        effort = "low"
    if effort == "minimal":
        effort = "low"
    return {"effort": effort, "summary": "detailed" if effort in ("high", "xhigh") else "auto"}


# -- the request body -------------------------------------------------------------------------------
def _image_url(part: dict, jpeg: bool) -> str:
    media, data = part.get("mediaType", "image/png"), part.get("data", "")
    if jpeg and media != "image/jpeg" and data:
        from ..files.imaging import ImageConversionError, as_jpeg

        try:
            data = base64.b64encode(as_jpeg(base64.b64decode(data), media)).decode("ascii")
            media = "image/jpeg"
        except ImageConversionError:  # undecodable: sent as it is, the backend says what it thinks
            pass
    return f"data:{media};base64,{data}"


def _tool_output(message: dict) -> str:
    output, name = message.get("output"), message.get("name")
    return _dumps({"name": name, **output} if isinstance(output, dict) else {"name": name, "output": output})


def translate_input(messages: list[dict], *, jpeg: bool = False) -> list[dict]:
    """Runtime messages as Responses `input` items."""
    items: list[dict] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "system":
            text = content if isinstance(content, str) else ""
            items.append({"type": "message", "role": "system", "content": [{"type": "input_text", "text": text}]})
        elif role == "user":
            parts: list[dict] = []
            for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or ():
                if part.get("type") == "text":
                    parts.append({"type": "input_text", "text": part.get("text", "")})
                elif part.get("type") == "image":
                    parts.append({"type": "input_image", "detail": "auto", "image_url": _image_url(part, jpeg)})
                # video: the Codex backend takes none
            items.append({"type": "message", "role": "user", "content": parts})
        elif role == "toolResponse":
            items.append(
                {"type": "function_call_output", "call_id": message.get("toolCallId"), "output": _tool_output(message)}
            )
        elif role == "assistant":
            blocks = list(content or ())
            # a summary kept beside its encrypted reasoning is not sent: the encrypted item stands for it
            encrypted = any(p.get("type") == "redacted_thinking" for p in blocks)
            texts: list[str] = []
            for part in blocks:
                kind = part.get("type")
                if kind == "toolCall":
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": part.get("id"),
                            "name": part.get("name"),
                            "arguments": _dumps(part.get("input") or {}),
                        }
                    )
                elif kind == "redacted_thinking" and part.get("data"):
                    items.append({"type": "reasoning", "encrypted_content": part["data"], "summary": []})
                elif kind == "text" and part.get("text"):
                    texts.append(part["text"])
                elif kind == "thinking" and part.get("thinking") and not encrypted:
                    texts.append(part["thinking"])
            if texts:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": t, "annotations": []} for t in texts],
                    }
                )
    return items


def build_codex_body(provider: ProviderConfig, model_cfg: ModelConfig, request: ModelRequest) -> dict:
    """What would be POSTed for `request` (pure: `%cireil prompt` shows it)."""
    model = normalize_model(request.model)
    body: dict[str, Any] = {
        "model": model,
        "instructions": request.system,
        "input": translate_input(request.messages, jpeg=provider.use_jpeg_for_images),
        "include": ["reasoning.encrypted_content"],
        "parallel_tool_calls": True,
        "prompt_cache_key": request.session_id,
        "reasoning": reasoning(model, model_cfg.reasoning),
        "store": False,
        "stream": True,  # the backend answers only as a stream
        "text": {"verbosity": "medium"},
    }
    if request.tools:
        body["tool_choice"] = "auto" if request.tool_choice == "auto" else "required"
        body["tools"] = [
            {  # keys in the original CireilClaw's order, so the bytes match
                "description": t.get("description", ""),
                "name": t["name"],
                "parameters": t.get("parameters") or {"type": "object", "properties": {}},
                "strict": False,
                "type": "function",
            }
            for t in request.tools
        ]
    return body


def headers(token: str, account: str, session_id: str, custom: dict[str, str | list[str]]) -> list[tuple[str, str]]:
    out = [
        ("Authorization", f"Bearer {token}"),
        ("Content-Type", "application/json"),
        ("OpenAI-Beta", OPENAI_BETA),
        ("accept", "text/event-stream"),
        ("chatgpt-account-id", account),
        ("conversation_id", session_id),
        ("originator", ORIGINATOR),
        ("session_id", session_id),
    ]
    for name, value in custom.items():
        if name.lower() == "content-type":
            continue  # the body is JSON whatever the table says
        out = [(n, v) for n, v in out if n.lower() != name.lower()]
        out += [(name, v) for v in value] if isinstance(value, list) else [(name, value)]
    return out


# -- the reply --------------------------------------------------------------------------------------
_GROWING = ("arguments", "_text", "_summary")  # the parts of an item that arrive in pieces


def _grown(item: dict, key: str) -> str:
    value = item.get(key)
    return value.text if isinstance(value, Growing) else value if isinstance(value, str) else ""


@dataclass
class _Items(ReplyReader):
    """The response's output items as they stream in (or from one JSON response)."""

    on_delta: Callable[[dict], None] | None
    items: dict[int, dict] = field(default_factory=dict)
    status: str | None = None
    usage: dict = field(default_factory=dict)
    done: bool = False

    def _item(self, index: Any) -> dict:
        key = index if is_index(index) else len(self.items)
        item = self.items.get(key)
        if item is None:
            if len(self.items) >= MAX_CALLS:
                raise MalformedReply(f"more than {MAX_CALLS} output items in one response")
            item = self.items[key] = {"type": None, **{k: Growing() for k in _GROWING}}
        return item

    def _update(self, item: dict, given: dict) -> None:
        """Merge an item the server sent whole: what it says wins over what the deltas built."""
        for key, value in given.items():
            if key in _GROWING:
                if value is not None and not isinstance(value, str):
                    raise MalformedReply(f"an output item's {key} is {describe(value)}, not a string")
                old = item.get(key)
                self.spent -= old.length if isinstance(old, Growing) else 0  # replaced, not added to
                item[key] = Growing(self._spend(value) if value else "")
            else:
                item[key] = value

    def _emit_call(self, index: Any, item: dict) -> None:
        self._emit(
            {
                "type": "toolCall",
                "index": index,
                "id": item.get("call_id"),
                "name": item.get("name", ""),
                "arguments": _grown(item, "arguments"),
            }
        )

    def _response(self, response: Any, status: str) -> None:
        if not isinstance(response, dict):
            response = {}
        raw = response.get("usage")
        if raw is not None:
            counts = self.clean_usage(raw)
            for source, target in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
                if source in counts:
                    self.usage[target] = counts[source]
            total = counts.get("total_tokens")
            self.usage["total_tokens"] = (
                total
                if isinstance(total, int)
                else self.usage.get("prompt_tokens", 0) + self.usage.get("completion_tokens", 0)
            )
        if not self.items:  # no item came as an event: the final response lists them
            output = response.get("output")
            output = [] if output is None else output
            if not isinstance(output, list):
                raise MalformedReply(f"a response's 'output' is {describe(output)}, not a list")
            for index, item in enumerate(output):
                if isinstance(item, dict):
                    self._update(self._item(index), item)
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        reason = reason[:100] if isinstance(reason, str) else None
        self.status = f"{status} ({reason})" if reason else status
        self.done = True

    @staticmethod
    def _failure(error: Any, fallback: str) -> ProviderError:
        message = error.get("message") if isinstance(error, dict) else None
        message = message if isinstance(message, str) and message else (str(error)[:4000] if error else fallback)
        message = excerpt(message)
        return ProviderError(f"the server reported an error: {message}", server_message=message)

    def event(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        index = data.get("output_index")
        delta = data.get("delta")
        if kind == "response.output_item.added" and isinstance(data.get("item"), dict):
            item = self._item(index)
            self._update(item, data["item"])
            if item.get("type") == "function_call":
                self._emit_call(index, item)
        elif kind == "response.function_call_arguments.delta" and isinstance(delta, str):
            item = self._item(index)
            item["arguments"].add(self._spend(delta))
            if item["arguments"].due():
                self._emit_call(index, item)
        elif kind == "response.output_text.delta" and isinstance(delta, str):
            self._item(index)["_text"].add(self._spend(delta))
            self._emit({"type": "text", "text": delta})
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta") and isinstance(
            delta, str
        ):
            self._item(index)["_summary"].add(self._spend(delta))
            self._emit({"type": "thinking", "text": delta})
        elif kind == "response.output_item.done" and isinstance(data.get("item"), dict):
            self._update(self._item(index), data["item"])  # the whole item: authoritative over the deltas
        elif kind in ("response.completed", "response.done"):
            self._response(data.get("response"), "completed")
        elif kind == "response.incomplete":
            self._response(data.get("response"), "incomplete")
        elif kind == "response.failed":
            response = data.get("response")
            raise self._failure(response.get("error") if isinstance(response, dict) else None, "response.failed")
        elif kind == "error":
            raise self._failure(data.get("error") or data, "error event")

    def body(self, data: Any) -> None:
        response = data.get("response", data) if isinstance(data, dict) else None
        if not isinstance(response, dict) or not isinstance(response.get("output"), list):
            if isinstance(response, dict) and response.get("error"):
                raise self._failure(response["error"], "error")
            raise MalformedReply(f"a response is {describe(data)} without an 'output' list")
        status = response.get("status")
        self._response(response, status[:100] if isinstance(status, str) and status else "completed")

    def finish(self, request_body: dict) -> ModelReply:
        reason = self.status or "(none)"
        ordered = [self.items[i] for i in sorted(self.items)]
        parts: list[dict] = []
        calls: list[dict] = []
        texts: list[str] = []
        thinking: list[str] = []
        for index in sorted(self.items):  # a live view shown only part of long arguments sees them whole
            item = self.items[index]
            if item.get("type") == "function_call" and item["arguments"].unshown:
                self._emit_call(index, item)
        for item in ordered:
            kind = item.get("type")
            if kind == "reasoning":
                summary = _summary(item) or _grown(item, "_summary")
                if summary:
                    thinking.append(summary)
                    parts.append({"type": "thinking", "thinking": summary})
                if isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]:
                    parts.append({"type": "redacted_thinking", "data": item["encrypted_content"]})
            elif kind == "function_call":
                calls.append(tool_call_part(item.get("call_id"), item.get("name") or "", _grown(item, "arguments")))
            elif kind == "message":
                texts.append(_message_text(item) or _grown(item, "_text"))
        if not calls:
            raise NoToolCalls(
                f"the model answered without calling a tool (status {reason})",
                text="\n\n".join(t for t in texts if t),
                thinking="\n\n".join(thinking),
                finish_reason=reason,
                usage=self.usage,
            )
        return ModelReply(assistant_message(parts + calls), self.usage, reason, request_body)


def _summary(item: dict) -> str:
    summary = item.get("summary")
    pieces = [p.get("text") for p in summary if isinstance(p, dict)] if isinstance(summary, list) else []
    return "\n\n".join(p for p in pieces if isinstance(p, str) and p)


def _message_text(item: dict) -> str:
    pieces = []
    content = item.get("content")
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict):
            text = part.get("text", part.get("refusal"))
            if isinstance(text, str):
                pieces.append(text)
    return "".join(pieces)


# -- the provider -----------------------------------------------------------------------------------
class PreviewLogin:
    """Stands for the login in `%cireil prompt`: where the token comes from, never the token."""

    def __init__(self, name: str) -> None:
        self.token = f"<access token from {name}>"
        self.account = "<from the access token>"


class CodexProvider(HttpProvider):
    """The shared loop (httpcall.py) with the OAuth login as credential: (access token, account id)."""

    path = PATH
    can_stop_streaming = False

    def __init__(self, provider: ProviderConfig, model: str, **kw: Any) -> None:
        super().__init__(provider, model, **kw)
        self._session_id = ""

    @property
    def _agent(self) -> Path:
        return Path(self.agent_dir or ".")  # always given by the engine; "." only for a bare client in a test

    @property
    def login_name(self) -> str:
        try:
            return codex_auth.shown(self._agent, codex_auth.login_path(self._agent, self.provider.auth_id))
        except ValueError:
            return f"{codex_auth.LOGIN_DIR}/{self.provider.auth_id}.json"

    def _fail(self, message: str) -> ProviderError:
        exc = ProviderError(f"provider '{self.provider.name}': {message}")
        exc.retryable = False  # asking again would meet the same login
        return exc

    async def _login(self, rejected: str | None = None) -> codex_auth.Login:
        name = self.login_name
        try:
            path = codex_auth.login_path(self._agent, self.provider.auth_id)
            return await codex_auth.valid_login(path, name, rejected=rejected)
        except ValueError as exc:
            raise self._fail(str(exc)) from None
        except codex_auth.LoginError as exc:
            if exc.message == "does not exist":
                raise self._fail(f"{name} does not exist: {codex_auth.how_to_log_in(self.provider.auth_id)}") from None
            raise self._fail(str(exc)) from None
        except codex_auth.RefreshFailed as exc:
            raise self._fail(
                f"refreshing the OpenAI Codex login in {name} failed: {exc}; log in again with "
                f"`cireilclaw codex --authId {self.provider.auth_id}`"
            ) from None

    async def _credential(self, rejected: str | None = None) -> tuple[str, str]:
        login = await self._login(rejected)
        account = codex_auth.account_id(login.access_token)
        if account is None and rejected is None:  # as the original: a refreshed token may carry it
            login = await self._login(login.access_token)
            account = codex_auth.account_id(login.access_token)
        if account is None:
            raise self._fail(f"the access token in {self.login_name} names no ChatGPT account (chatgpt_account_id)")
        return login.access_token, account

    async def _authorize(self) -> Any:
        return await self._credential()

    async def _after_http_error(self, err: HttpError, auth: Any, tried: set, body: dict) -> Any:
        if err.status != 401 or "refreshed" in tried:
            return None
        tried.add("refreshed")  # once: a second 401 fails the request
        try:
            return await self._credential(rejected=auth[0])
        except ProviderError as exc:
            exc.request_body = body
            raise

    def _unusable(self, auth: Any) -> None:
        pass  # one login, nothing to rotate

    def _http_failure(self, err: HttpError) -> str:
        if err.status == 404 and _USAGE_LIMIT.search(err.message):
            return f"OpenAI Codex usage limit reached: {err.message}"
        if err.status == 401:
            return (
                f"HTTP 401 from {self.url} with a freshly refreshed login ({self.login_name}): {err.message}; "
                f"log in again with `cireilclaw codex --authId {self.provider.auth_id}`"
            )
        return super()._http_failure(err)

    def _headers(self, auth: Any) -> list[tuple[str, str]]:
        token, account = (auth.token, auth.account) if isinstance(auth, PreviewLogin) else auth
        return headers(token, account, self._session_id, self.provider.custom_headers)

    def preview_headers(self, session_id: str) -> list[tuple[str, str]]:
        self._session_id = session_id
        return self._headers(PreviewLogin(self.login_name))

    def _body(self, model_cfg: ModelConfig, request: ModelRequest) -> dict:
        self._session_id = request.session_id
        return build_codex_body(self.provider, model_cfg, request)

    def _reader(self, on_delta: Callable[[dict], None] | None) -> ReplyReader:
        return _Items(on_delta)
