"""The request loop every provider kind shares: POST the body, read the reply (a Server-Sent Events stream
or one JSON body) into the kind's reader, and retry what a retry can fix.

Retries, in order: HTTP 429 benches the key and moves to the next one of the pool (upstream-formats §2.5);
a 400 about tool_choice switches this client to "auto", a 400 about streaming to plain JSON, once each; a
kind may add its own (openai-codex refreshes its login once on a 401). A reply that arrived but was unusable
hands the same key to the next request. Everything else fails with the URL, the HTTP status and the server's
message. Each kind supplies only its wire format: the body, the headers and a reader of its reply.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..base.jsonbound import loads as bounded_loads  # a depth bomb from a provider is a ValueError
from ..base.secrets import SECRETS
from ..config.cireil_config import DEFAULT_LIMITS, Limits, setting
from ..config.engine_config import DEFAULT_API_KEY, MissingApiKey, ModelConfig, ProviderConfig
from ..mcp.sse import SseParser, SseTooLarge
from .bodyread import ACCEPT_ENCODING, BadEncoding, BodyTooLarge, decoded_pieces, read_capped, read_excerpt
from .keypool import AllKeysRateLimited, KeyPools
from .replytypes import MalformedReply, ModelReply, ModelRequest, ProviderError, ProviderLimitExceeded, ReplyTooLarge

CONNECT_TIMEOUT_S = 30.0
DRAIN_GRACE_S = 1.0
MAX_ERROR_TEXT = 2000  # characters of a server's error message kept (in the exception, the recording, a view)
LOOPBACK = ("127.0.0.1", "localhost", "::1")


PREVIEW = object()  # the credential of a request that is only shown


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def excerpt(text: str, limit: int = MAX_ERROR_TEXT) -> str:
    """At most `limit` characters of a server's words, saying how much was left out."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters not shown)"


def error_message(raw: bytes, *, cut: bool = False) -> str:
    """The server's own words from an error body, {"error": {"message"}}, {"error": "..."} or the text, as a
    bounded excerpt. `cut`: the body went on past what was read (then it is quoted, never parsed)."""
    text = raw.decode("utf-8", "replace")
    more = " … (the rest of the body was not read)" if cut else ""
    if cut:
        return excerpt(text) + more
    try:
        data = bounded_loads(text)
    except ValueError:
        return excerpt(text) or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return excerpt(error["message"])
        if isinstance(error, str):
            return excerpt(error)
    return excerpt(text)


def http_client(url: str) -> httpx.AsyncClient:
    """A client for one provider: no redirects (they would carry the credential elsewhere); a local server
    is reached directly, since a proxy from the environment would not know 127.0.0.1."""
    from .netbackend import fast_transport

    host = urlsplit(url).hostname or ""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(DEFAULT_LIMITS.idle_timeout_s, connect=CONNECT_TIMEOUT_S),
        headers={"Accept-Encoding": ACCEPT_ENCODING},  # what bodyread.py decodes, in bounded pieces
        follow_redirects=False,
        trust_env=host not in LOOPBACK,
        transport=fast_transport(),  # proxies from the environment still apply (as httpx mounts)
    )


def describe(value: Any) -> str:
    """What a value from a server is, for a message: its JSON kind, never its (possibly huge) text."""
    kinds = {str: "a string", bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "an object"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


class Growing:
    """Text that arrives in pieces, kept as their list and joined when read: linear however small the
    pieces (repeated `+=` on a string held in a dict copies it whole each time)."""

    __slots__ = ("_parts", "_shown", "length")
    SHORT = 4096  # while this short, a live view is shown the text at every piece

    def __init__(self, text: str = "") -> None:
        self._parts = [text] if text else []
        self.length = len(text)
        self._shown = -1

    def add(self, piece: str) -> None:
        self._parts.append(piece)
        self.length += len(piece)

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def due(self) -> bool:
        """Whether a live view should be shown the whole text now: at every piece while it is short, then each
        time it grew by an eighth, so that showing it costs a constant factor over receiving it."""
        if self.length <= self.SHORT or self.length >= self._shown + self._shown // 8:
            self._shown = self.length
            return True
        return False

    @property
    def unshown(self) -> bool:
        return self._shown != self.length


class ReplyReader:
    """One kind's reply as it is assembled, from stream events or from one JSON body."""

    done = False  # the stream's end marker arrived: what follows is only drained
    on_delta: Callable[[dict], None] | None = None  # who watches the reply arrive (a live view), if anyone
    budget: int = DEFAULT_LIMITS.reply_chars  # characters of text, reasoning and arguments the reply may hold
    spent: int = 0
    notes: list[str] | None = None  # what was wrong but ignored (usage counts that are not counts)

    def _emit(self, event: dict) -> None:
        if self.on_delta is not None:
            self.on_delta(event)

    def _spend(self, text: str) -> str:
        """Count a piece of the reply's text, reasoning or arguments against the budget; the piece."""
        self.spent += len(text)
        if self.spent > self.budget:
            raise ReplyTooLarge(self.spent)
        return text

    def _note(self, text: str) -> None:
        if self.notes is None:
            self.notes = []
        if text not in self.notes and len(self.notes) < 20:
            self.notes.append(text)

    def clean_usage(self, raw: Any) -> dict:
        """The usage counts that are counts (whole numbers >= 0); anything else is left out with a note."""
        from .replytypes import clean_usage

        usage, dropped = clean_usage(raw)
        if dropped:
            self._note(f"the provider sent usage counts that are not whole numbers >= 0, ignored: {dropped}")
        return usage

    def event(self, data: Any) -> None:
        """One streamed event's JSON data."""
        raise NotImplementedError

    def body(self, data: Any) -> None:
        """A whole JSON reply (a server that does not stream)."""
        raise NotImplementedError

    def cut_short(self) -> bool:
        """The stream ended without what makes the reply whole."""
        return not self.done

    def finish(self, request_body: dict) -> ModelReply:
        raise NotImplementedError


class HttpProvider:
    """Calls one provider for one model; remembers what the backend refused (tool_choice, streaming).

    Authentication defaults to the provider's API key pool (the `openai` and `anthropic` kinds); a kind
    with another credential overrides `_authorize`, `_after_http_error` and `_unusable`.
    """

    path = ""  # appended to apiBase
    can_stop_streaming = True  # False: the backend only streams, a 400 about streaming is final

    def __init__(
        self,
        provider: ProviderConfig,
        model: str,
        *,
        client: httpx.AsyncClient | None = None,
        model_cfg: ModelConfig | None = None,
        pools: KeyPools | None = None,
        agent_dir: Path | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.agent_dir = agent_dir  # the agent the provider serves (where an OAuth login is looked for)
        # the model table the turn chose (§2.9: it may be the default provider's); None = this provider's own
        self.model_cfg = model_cfg
        self._client = client
        self._owns_client = client is None
        self._pool = (pools or KeyPools()).get(provider.api_keys)
        self._auto_tool_choice = False  # a 400 about tool_choice switched this provider to "auto"
        self._stream = True  # a 400 about streaming switched this provider to plain JSON
        self.last_request_body: dict = {}
        self.limits: Limits = DEFAULT_LIMITS  # [limits] of config/cireil.toml; the engine sets it each turn

    @property
    def url(self) -> str:
        return self.provider.api_base.rstrip("/") + self.path

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:  # created on first use, inside the runtime's event loop
            self._client = http_client(self.provider.api_base)
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client this provider made (a client passed in belongs to the caller)."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    # -- what each kind supplies ------------------------------------------------------------------
    def _body(self, model_cfg: ModelConfig, request: ModelRequest) -> dict:
        raise NotImplementedError

    def _headers(self, auth: Any) -> list[tuple[str, str]]:
        raise NotImplementedError

    def _reader(self, on_delta: Callable[[dict], None] | None) -> ReplyReader:
        raise NotImplementedError

    def preview_headers(self, session_id: str) -> list[tuple[str, str]]:
        """The headers a request would carry, each key replaced by where it comes from (`%cireil prompt`)."""
        return self._headers(PREVIEW)

    # -- credentials: the API key pool ------------------------------------------------------------
    async def _authorize(self) -> Any:
        """The credential of the first attempt (here: the index of the pool's next key)."""
        try:
            return self._pool.take()
        except AllKeysRateLimited as exc:
            raise ProviderError(f"provider '{self.provider.name}': {exc}", status=429) from None

    def _api_key(self, index: Any) -> str:
        if index is PREVIEW:
            source = self.provider.api_keys[0]
            return source.describe() if source.value == DEFAULT_API_KEY else f"<key: {source.describe()}>"
        try:
            key = self.provider.api_keys[index].resolve()
        except MissingApiKey as exc:
            raise ProviderError(f"provider '{self.provider.name}': {exc}") from None
        if self.provider.api_keys[index].env:  # a variable set after engine.toml was read: masked from now on
            SECRETS.add(key)
        return key

    async def _after_http_error(self, err: HttpError, auth: Any, tried: set, body: dict) -> Any:
        """The credential to try again with after `err`, or None when the error is not the credential's."""
        if err.status != 429:
            return None
        self._pool.bench(auth)
        tried.add(auth)
        count = len(self.provider.api_keys)
        if len(tried) >= count or not self._pool.available:
            keys = "the only API key" if count == 1 else f"all {count} API keys"
            raise self._error(f"rate limited (HTTP 429) on {keys}: {err.message}", err, body)
        return await self._authorize()

    def _unusable(self, auth: Any) -> None:
        """A reply came with this credential but could not be used: the next request takes it again."""
        self._pool.reuse(auth)

    # -- the loop ---------------------------------------------------------------------------------
    async def complete(self, request: ModelRequest, *, on_delta: Callable[[dict], None] | None = None) -> ModelReply:
        request = replace(request, model=request.model or self.model)
        if self.model_cfg is not None and request.model == self.model:
            model_cfg = self.model_cfg
        else:
            model_cfg = self.provider.model_config(request.model)
        tried: set = set()
        switched_tool_choice = False
        auth = await self._authorize()
        while True:
            sent = replace(request, tool_choice="auto") if self._auto_tool_choice else request
            body = self._body(model_cfg, sent)
            self.last_request_body = body
            try:
                return await self._post(body, auth, on_delta)
            except HttpError as err:
                again = await self._after_http_error(err, auth, tried, body)
                if again is not None:
                    auth = again
                    continue
                lower = err.message.lower()
                refused_choice = err.status == 400 and "tool_choice" in lower and not switched_tool_choice
                if refused_choice and body.get("tool_choice") not in (None, "auto"):
                    self._auto_tool_choice = switched_tool_choice = True
                    continue
                if err.status == 400 and self._stream and self.can_stop_streaming and "stream" in lower:
                    self._stream = False
                    continue
                raise self._error(self._http_failure(err), err, body) from None
            except ProviderError as exc:
                self._unusable(auth)
                exc.request_body = body
                raise
            except httpx.ConnectTimeout:
                raise self._error(f"no connection to {self.url} within {CONNECT_TIMEOUT_S:g} s", None, body) from None
            except httpx.TimeoutException as exc:
                raise self._limit_error(
                    f"{self.url} sent nothing for {self.limits.idle_timeout_s:g} s ({type(exc).__name__})",
                    "idle_timeout_s",
                    body,
                ) from None
            except httpx.HTTPError as exc:
                raise self._error(f"could not talk to {self.url}: {exc or type(exc).__name__}", None, body) from None

    def _http_failure(self, err: HttpError) -> str:
        return f"HTTP {err.status} from {self.url}: {err.message}"

    def _error(self, message: str, err: HttpError | None, body: dict, *, kind: type = ProviderError) -> ProviderError:
        """The one place a provider's failure becomes its message (the server's words are already excerpts)."""
        exc = kind(
            f"provider '{self.provider.name}': {message}",
            status=err.status if err else None,
            server_message=err.message if err else None,
        )
        exc.request_body = body
        return exc

    def _limit_error(self, what: str, name: str, body: dict) -> ProviderError:
        """A reply that passed one of the [limits]: what happened, and the setting that moves the limit."""
        return self._error(
            f"{what}; the call was stopped (raise {setting(name)})", None, body, kind=ProviderLimitExceeded
        )

    def _encode(self, body: dict) -> bytes:
        from .tooldefs import encode_body

        return encode_body(body)

    async def _post(self, body: dict, auth: Any, on_delta: Callable[[dict], None] | None) -> ModelReply:
        limits = self.limits
        reader = self._reader(on_delta)
        reader.budget = limits.reply_chars
        data = self._encode(body)
        timeout = httpx.Timeout(limits.idle_timeout_s, connect=min(CONNECT_TIMEOUT_S, limits.idle_timeout_s))
        try:
            async with asyncio.timeout(limits.total_timeout_s):
                # leaving this block, also by cancellation, closes the response (and its connection if unread)
                async with self._http().stream(
                    "POST", self.url, content=data, headers=self._headers(auth), timeout=timeout
                ) as response:
                    if response.status_code >= 400:
                        raw, cut = await read_excerpt(response, limits.error_bytes)
                        raise HttpError(response.status_code, error_message(raw, cut=cut))
                    if "text/event-stream" in response.headers.get("content-type", ""):
                        await self._read_events(response, reader)
                    else:
                        raw = await read_capped(response, limits.body_bytes)
                        self._read_body(raw, response.status_code, reader)
                return self._finish(reader, body)
        except TimeoutError:
            raise self._limit_error(
                f"the reply from {self.url} took longer than {limits.total_timeout_s:g} s", "total_timeout_s", body
            ) from None
        except BodyTooLarge:
            raise self._limit_error(
                f"the reply from {self.url} is larger than {limits.max_body_mb:g} MB (after decompression)",
                "max_body_mb",
                body,
            ) from None
        except SseTooLarge:
            raise self._limit_error(
                f"one event of the stream from {self.url} is larger than {limits.max_event_mb:g} MB "
                "(a line without end)",
                "max_event_mb",
                body,
            ) from None
        except ReplyTooLarge:
            raise self._limit_error(
                f"the reply's text, reasoning and tool-call arguments from {self.url} passed "
                f"{limits.max_reply_mb:g} MB",
                "max_reply_mb",
                body,
            ) from None
        except BadEncoding as exc:
            raise self._error(f"the reply from {self.url} cannot be decoded: {exc}", None, body) from None
        except MalformedReply as exc:
            raise self._error(f"{self.url} sent a reply of the wrong shape: {exc}", None, body) from None

    def _read_body(self, raw: bytes, status: int, reader: ReplyReader) -> None:
        try:
            payload = bounded_loads(raw)
        except ValueError:
            snippet = raw[:200].decode("utf-8", "replace")
            raise ProviderError(
                f"provider '{self.provider.name}': {self.url} answered HTTP {status} "
                f"with something that is not JSON: {snippet!r}"
            ) from None
        _shielded(reader.body, payload)

    def _finish(self, reader: ReplyReader, body: dict) -> ModelReply:
        reply = _shielded(reader.finish, body)
        if reader.notes:
            reply.notes = list(reader.notes)
        return reply

    async def _read_events(self, response: httpx.Response, reader: ReplyReader) -> None:
        parser = SseParser(limit=self.limits.event_chars)
        text = codecs.getincrementaldecoder("utf-8")("replace")
        # After the end marker the rest of the body (the chunked terminator) is still read, so that the
        # connection returns to the pool: left unread it is closed, and every step of a turn would pay a new
        # TCP (and TLS) handshake. A server that keeps streaming after it gets a short grace, then is cut off.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(None) as deadline:
                async for piece in decoded_pieces(response, self.limits.body_bytes):
                    if reader.done:
                        continue
                    for event in parser.feed(text.decode(piece)):
                        _feed(event.data, reader)
                        if reader.done:
                            deadline.reschedule(asyncio.get_running_loop().time() + DRAIN_GRACE_S)
                            break
        if not reader.done:
            for event in [*parser.feed(text.decode(b"", final=True)), *parser.finish()]:
                _feed(event.data, reader)
        if reader.cut_short():
            raise ProviderError(f"provider '{self.provider.name}': the stream ended before the reply was complete")


def _feed(data: str, reader: ReplyReader) -> None:
    if data.strip() == "[DONE]":  # the chat-completions end marker
        reader.done = True
        return
    try:
        parsed = bounded_loads(data)
    except ValueError:
        return  # a keepalive or vendor comment in data form; not part of the reply
    _shielded(reader.event, parsed)


def _shielded(step: Callable[[Any], Any], data: Any) -> Any:
    """A reader's step on what the server sent: a shape no reader foresaw (a string where an object belongs,
    a list for a number) is the server's fault, reported as such, never a bare TypeError from the cell."""
    try:
        return step(data)
    except (ProviderError, ReplyTooLarge, MalformedReply):
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise MalformedReply(f"{type(exc).__name__} while reading it ({str(exc)[:200]})") from None
