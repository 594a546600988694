"""Streamable HTTP: one POST per message, JSON or SSE answers, in either era of the protocol.

Legacy revisions (2025-03-26 .. 2025-11-25) open with the initialize handshake and may keep a session;
the modern one (2026-07-28) has neither: each request carries its version and client description in
`params._meta` and repeats method and tool name in headers, so any server replica can route it.

HTTP itself is h1.py's (HTTP/1.1 on pooled keep-alive connections), or httpx's when proxy settings in
the environment choose the route (viahttpx.py); both hand back the same response and failure types.
Deadlines are the caller's (asyncio.timeout around whole operations): per-read timeouts would be reset
forever by a server's keepalive comments. Answers are read with a size bound: a tools/call answer past
it goes to disk (spill.py), any other is refused.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import itertools
import json
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

from . import jsonrpc
from .cookies import Jar
from .errors import McpError, McpHttpError
from .h1conn import HttpError
from .headers import header_value
from .spill import Spill, spill_rest
from .sse import Event, SseParser, SseTooLarge
from .wirelog import Exchange, WireLog

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")  # legacy, spoken after the initialize handshake
MODERN = "2026-07-28"
CLIENT_INFO = {"name": "cireil", "version": "0"}
_META = json.dumps(
    {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},  # tools only: no sampling, roots, elicitation
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    },
    separators=(",", ":"),
)
_NAMED = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}  # mirrored in Mcp-Name
_ACCEPT = "application/json, text/event-stream"
# sent unless mcp.toml sets them (Accept-Encoding: what h1.py inflates)
_DEFAULTS = {"Accept-Encoding": "gzip, deflate", "User-Agent": "cireil"}
_CANCEL_WAIT_S = 2.0
_MAX_ERROR_BODY = 2000  # characters of an error body quoted in a message
_ERROR_READ = 64 * 1024  # bytes of an error body or of an answer to a notification read at most
MESSAGE_LIMIT = 32 * 1024 * 1024  # bytes of an answer other than a spilled tools/call (a listing, a handshake)
_DRAIN_S = 0.05
_MAX_HEADER_SETS = 1000


class Fields(list):
    """Request header fields as sent (name, value); the wire log reads them with names in lower case."""

    def multi_items(self) -> list[tuple[str, str]]:
        return [(name.lower(), value) for name, value in self]


class Transport:
    """One server connection: the era and session it negotiated and the HTTP it talks through."""

    def __init__(self, url: str, headers: dict[str, str], wire: WireLog | None = None) -> None:
        self.url = url
        self.wire = wire  # the wire log (wirelog.py); None records nothing
        self._http = _http_for(url)
        self._timed_connects = self._http.timed_connects
        configured = {k.lower() for k in headers}
        base = [(k, v) for k, v in _DEFAULTS.items() if k.lower() not in configured]
        basic = getattr(getattr(self._http, "endpoint", None), "basic", None)
        if basic is not None and "authorization" not in configured:
            base.append(("Authorization", basic))
        self._base = [*base, *headers.items()]
        self._cookies = Jar(url)
        # whole request header sets (defaults, mcp.toml headers, ours), built once per distinct set
        self._header_sets: dict[tuple[str | None, ...], Fields] = {}
        self._ids = itertools.count(1)
        self.session_id: str | None = None
        self.version: str | None = None
        self.modern = False
        self.init_result: dict[str, Any] = {}
        self.notifications: list[dict] = []  # the latest request's server notifications (progress, logs)

    # -- lifecycle ----------------------------------------------------------------------------
    async def discover(self) -> dict:
        """The 2026-07-28 probe: server/discover sent as a modern request. Adopting its answer is the caller's."""
        self.session_id = self.version = None
        self.modern = False
        return await self.request("server/discover")

    def adopt_modern(self, result: dict) -> None:
        self.version, self.modern, self.init_result = MODERN, True, result

    async def initialize(self) -> dict:
        self.session_id = self.version = None
        self.modern = False
        result = await self.request(
            "initialize", {"protocolVersion": VERSIONS[0], "capabilities": {}, "clientInfo": CLIENT_INFO}
        )
        version = result.get("protocolVersion")
        if version not in VERSIONS:
            raise McpError(
                f"server chose protocol version {version!r}; this client speaks {', '.join(VERSIONS)} "
                "over Streamable HTTP (no stdio, no legacy HTTP+SSE)"
            )
        self.version = version
        self.init_result = result
        await self.notify("notifications/initialized")
        return result

    async def close(self) -> None:
        try:
            if self.session_id:
                # the server may be gone; the session dies with it
                with contextlib.suppress(HttpError, TimeoutError):
                    async with asyncio.timeout(_CANCEL_WAIT_S):
                        await self._post_aside("(end session)", b"", "DELETE")
        finally:
            await self._http.aclose()

    # -- messages -----------------------------------------------------------------------------
    async def request(
        self, method: str, params: dict | None = None, headers: dict[str, str] | None = None, spill: Spill | None = None
    ) -> dict:
        """`headers` are extra modern routing headers (Mcp-Param-*); a legacy server is not sent them. With `spill`,
        an answer too big to hold becomes a result marked spill.SPILLED (see spill.py); without, an error."""
        rid = next(self._ids)
        try:
            return await self._exchange(rid, method, params, headers, spill, retry=method != "initialize")
        except asyncio.CancelledError:
            # a timeout or an interrupt: tell the server to stop (initialize must not be cancelled). A modern
            # server takes the closed response stream as the cancel: it has no cancel notification over HTTP.
            if not self.modern and method not in ("initialize", "server/discover"):
                await self._cancel(rid)
            raise

    async def notify(self, method: str, params: dict | None = None) -> None:
        status, text = await self._post_aside(method, jsonrpc.notification(method, params))
        if not 200 <= status < 300:
            raise self._refusal(status, None, text)

    async def _cancel(self, rid: int) -> None:
        body = jsonrpc.notification("notifications/cancelled", {"requestId": rid, "reason": "cancelled by the client"})
        # best effort: the caller's cancellation matters more than the courtesy
        with contextlib.suppress(HttpError, McpError, TimeoutError, asyncio.CancelledError):
            async with asyncio.timeout(_CANCEL_WAIT_S):
                await self._post_aside("notifications/cancelled", body)

    async def _post_aside(self, label: str, body: bytes, verb: str = "POST") -> tuple[int, str]:
        """A message off the call path (a notification, an answer to the server, DELETE): status and body text."""
        fields = self._with_cookies(self._session_fields())
        tap = self.wire.begin(label, body, fields, verb) if self.wire is not None else None
        failure: BaseException | None = None
        try:
            response = await self._send(verb, fields, body, tap)
            try:
                if tap is not None:
                    tap.answered(response.status, response.headers)
                raw = await response.read(_ERROR_READ)
            finally:
                await response.aclose()
            text = raw.decode("utf-8", "replace") if raw is not None else f"(an answer over {_ERROR_READ} bytes)"
            if text and tap is not None:
                tap.message(text, "text")
            return response.status, text
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if tap is not None:
                tap.end(self.version, failure)

    async def _exchange(
        self,
        rid: int,
        method: str,
        params: dict | None,
        extra: dict[str, str] | None,
        spill: Spill | None,
        *,
        retry: bool,
    ) -> dict:
        self.notifications = []
        if self.modern or method == "server/discover":
            body = jsonrpc.request(rid, method, params, _META)
            fields = self._modern_fields(method, params, extra)
        else:
            body = jsonrpc.request(rid, method, params)
            initial = method == "initialize"
            fields = self._header_set(
                ("legacy", None if initial else self.session_id, None if initial else self.version)
            )
        fields = self._with_cookies(fields)
        # wire log hook: a reference to what is sent, timestamps; the rest is done only when someone looks
        tap = self.wire.begin(method, body, fields) if self.wire is not None else None
        try:
            response = await self._send("POST", fields, body, tap)
        except BaseException as exc:
            if tap is not None:
                tap.end(self.version, exc)
            raise
        if tap is not None:
            tap.answered(response.status, response.headers)
        failure: BaseException | None = None
        try:
            if response.status == 404 and self.session_id and retry:
                # the session expired: start a new one and send the request once more
                await response.read(_ERROR_READ)
                await response.aclose()
                await self.initialize()
                return await self._exchange(rid, method, params, extra, spill, retry=False)
            if not 200 <= response.status < 300:
                raw = await response.read(_ERROR_READ)
                text = raw.decode("utf-8", "replace") if raw is not None else ""
                if tap is not None:
                    tap.message(text, "text")
                raise self._refusal(response.status, response, text)
            if method == "initialize":
                self._take_session(response.get("mcp-session-id"))
            result = await self._answer(response, rid, method, tap, spill)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            await response.aclose()
            if tap is not None:
                tap.end(self.version, failure)
        if self.modern and result.get("resultType") == "input_required":
            # the server wants the client to answer something first (sampling, elicitation...): we offer none
            raise McpError(f"server asked for client input to complete {method}, which cireil does not provide")
        return result

    async def _send(self, verb: str, fields: Fields, body: bytes, tap: Exchange | None) -> Any:
        response = await self._http.send(verb, fields, body, tap)
        set_cookie = response.get_all("set-cookie")
        if set_cookie:  # a load balancer's stickiness: sent back from now on
            self._cookies.take(set_cookie)
        return response

    def _with_cookies(self, fields: Fields) -> Fields:
        if not self._cookies:
            return fields
        cookie = self._cookies.header()
        return Fields([*fields, ("Cookie", cookie)]) if cookie else fields

    def _modern_fields(self, method: str, params: dict | None, extra: dict[str, str] | None) -> Fields:
        key = _NAMED.get(method)
        name = params.get(key) if key is not None and params is not None else None
        fields = self._header_set(("modern", method, name if isinstance(name, str) else None))
        return Fields([*fields, *extra.items()]) if extra else fields

    def _header_set(self, key: tuple[str | None, ...]) -> Fields:
        """The headers of a POST: key ("legacy", session id, version) or ("modern", method, Mcp-Name)."""
        fields = self._header_sets.get(key)
        if fields is None:
            ours = {"Accept": _ACCEPT, "Content-Type": "application/json"}
            if key[0] == "modern":
                ours |= {"MCP-Protocol-Version": MODERN, "Mcp-Method": str(key[1])}
                if key[2] is not None:
                    ours["Mcp-Name"] = header_value(key[2])
            else:
                ours |= {"Mcp-Session-Id": key[1], "MCP-Protocol-Version": key[2]}
            fields = Fields([*self._base, *((k, v) for k, v in ours.items() if v is not None)])
            if len(self._header_sets) < _MAX_HEADER_SETS:  # one per tool; a bound for servers with thousands
                self._header_sets[key] = fields
        return fields

    def _session_fields(self) -> Fields:
        """For the legacy session's own messages (notifications, answers to the server, DELETE)."""
        fields = Fields([*self._base, ("Accept", _ACCEPT), ("Content-Type", "application/json")])
        if self.session_id:
            fields.append(("Mcp-Session-Id", self.session_id))
        if self.version:
            fields.append(("MCP-Protocol-Version", self.version))
        return fields

    def _take_session(self, sid: str | None) -> None:
        if sid is not None and not (sid and all(0x21 <= ord(c) <= 0x7E for c in sid)):
            raise McpError(f"server sent an invalid Mcp-Session-Id {sid[:80]!r}")
        self.session_id = sid

    def _refusal(self, code: int, response: Any, body: str) -> McpError:
        if 300 <= code < 400:
            where = (response.get("location") if response is not None else None) or "(no Location header)"
            return McpError(
                f"HTTP {code} redirect to {where[:300]}; redirects are refused so that configured headers never "
                "reach another endpoint: put the final URL in config/mcp.toml if you trust it"
            )
        error = jsonrpc.error_in_body(body) or {}
        reason = response.reason if response is not None else ""
        detail = str(error.get("message") or "") or body.strip()[:_MAX_ERROR_BODY] or reason
        return McpHttpError(f"HTTP {code} from {self.url}: {detail}", code, error.get("code"), error.get("data"))

    async def _answer(self, response: Any, rid: int, method: str, tap: Exchange | None, spill: Spill | None) -> dict:
        kind = (response.get("content-type") or "").split(";", 1)[0].strip().lower()
        if kind == "application/json":
            return await self._json(response, rid, method, tap, spill)
        if kind == "text/event-stream":
            return await self._stream(response, rid, method, tap, spill)
        if response.status == 202 or not kind:
            raise McpError(f"server accepted {method} without answering it (HTTP {response.status}, no body type)")
        raise McpError(f"server answered {method} with unsupported content type {kind[:80]!r}")

    async def _json(self, response: Any, rid: int, method: str, tap: Exchange | None, spill: Spill | None) -> dict:
        limit = spill.threshold if spill is not None else MESSAGE_LIMIT
        kept: list[bytes] = []
        size = 0
        chunks = response.chunks()
        async for data in chunks:
            size += len(data)
            kept.append(data)
            if size > limit:
                if spill is None:
                    raise McpError(f"the answer to {method} is over {limit} bytes; not read further")
                result = await spill_rest(spill, kept, chunks, "JSON")
                if tap is not None:
                    tap.message(result["content"][0]["text"], "text")
                return result
        text = (kept[0] if len(kept) == 1 else b"".join(kept)).decode("utf-8", "replace")
        if tap is not None:
            tap.message(text, "json")
        for message in jsonrpc.decode(text):
            if jsonrpc.is_response(message) and message.get("id") == rid:
                return jsonrpc.outcome(message)
        raise McpError(f"the JSON answer to {method} holds no response with id {rid}")

    async def _stream(self, response: Any, rid: int, method: str, tap: Exchange | None, spill: Spill | None) -> dict:
        parser = SseParser(limit=spill.threshold if spill is not None else MESSAGE_LIMIT)
        text = codecs.getincrementaldecoder("utf-8")("replace")
        chunks = response.chunks()
        try:
            async for data in chunks:
                for event in parser.feed(text.decode(data)):
                    found = await self._event(event, rid, tap)
                    if found is not None:
                        await _drain(chunks)
                        return found
            for event in [*parser.feed(text.decode(b"", final=True)), *parser.finish()]:
                found = await self._event(event, rid, tap)
                if found is not None:
                    return found
        except SseTooLarge as big:
            if spill is None:
                raise McpError(f"an event in the answer to {method} is over {parser.limit} characters") from None
            result = await spill_rest(spill, [big.pending.encode()], chunks, "event stream")
            if tap is not None:
                tap.message(result["content"][0]["text"], "text")
            return result
        raise McpError(f"server closed the event stream before answering {method}")

    async def _event(self, event: Event, rid: int, tap: Exchange | None) -> dict | None:
        """Our response's result (or its error raised); None for anything else on the stream."""
        if tap is not None:
            tap.message(event.data, "sse")
        if event.event != "message":
            return None
        for message in jsonrpc.decode(event.data):
            if jsonrpc.is_response(message):
                if message.get("id") == rid:
                    return jsonrpc.outcome(message)
                continue  # an answer to something we no longer wait for (a cancelled call)
            if "id" in message and "method" in message:
                if not self.modern:  # a modern client never POSTs responses: asks come as results
                    await self._answer_server(message)
            elif "method" in message and len(self.notifications) < 1000:
                self.notifications.append(message)
        return None

    async def _answer_server(self, message: dict) -> None:
        """Requests from the server: ping is answered; the rest (sampling, roots...) we do not offer."""
        if message["method"] == "ping":
            body = jsonrpc.response(message["id"], {})
        else:
            error = {"code": -32601, "message": f"cireil does not support {message['method']}"}
            body = jsonrpc.response(message["id"], error=error)
        await self._post_aside(f"(answer to {message['method']})", body)


def _http_for(url: str) -> Any:
    """h1.py's direct HTTP; httpx when proxy settings in the environment leave the choice of route to it
    (it honours HTTP(S)_PROXY, ALL_PROXY and NO_PROXY)."""
    if any(scheme in urllib.request.getproxies() for scheme in ("http", "https", "all")):
        from .viahttpx import ProxiedHttp

        return ProxiedHttp(url)
    from .h1 import DirectHttp

    return DirectHttp(url)


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read the little that follows the answer (the stream's end), so the connection can be reused.

    A server that keeps the stream open gets a short grace, then the connection is dropped instead.
    """
    with contextlib.suppress(TimeoutError, HttpError):
        async with asyncio.timeout(_DRAIN_S):
            async for _ in chunks:
                pass
