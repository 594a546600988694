"""Streamable HTTP: one POST per message, JSON or SSE answers, in either era of the protocol.

Legacy revisions (2025-03-26 .. 2025-11-25) open with the initialize handshake and may keep a session;
the modern one (2026-07-28) has neither: each request carries its version and client description in
`params._meta` and repeats method and tool name in headers, so any server replica can route it.

Deadlines are the caller's (asyncio.timeout around whole operations): httpx only has per-read
timeouts, which a server's keepalive comments would reset forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import httpx

from ..netbackend import CONNECT_TIMER, uses_asyncio_backend
from . import jsonrpc
from .errors import McpError, McpHttpError
from .headers import header_value
from .sse import SseParser
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
_CANCEL_WAIT_S = 2.0
_MAX_ERROR_BODY = 2000
_DRAIN_S = 0.05
_MAX_HEADER_SETS = 1000


class Transport:
    """One server connection: the era and session it negotiated and the HTTP client it talks through."""

    def __init__(self, url: str, headers: dict[str, str], wire: WireLog | None = None) -> None:
        self.url = url
        self.wire = wire  # the wire log (wirelog.py); None records nothing
        self._direct = _direct_pool()
        self._timed_connects = self._direct is not None and uses_asyncio_backend(self._direct)
        # follow_redirects=False: a redirect would carry the configured credentials to another endpoint
        self._client = httpx.AsyncClient(follow_redirects=False, timeout=None, headers=headers, transport=self._direct)
        self._url = httpx.URL(url)  # parsed once: every request goes to this one endpoint
        # whole request header sets (client defaults, mcp.toml headers, ours), built once per distinct set
        self._header_sets: dict[tuple[str | None, ...], httpx.Headers] = {}
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
                with contextlib.suppress(httpx.HTTPError):  # the server may be gone; the session dies with it
                    response = await self._client.delete(self.url, headers=self._headers(), timeout=_CANCEL_WAIT_S)
                    _log_after(self.wire, "(end session)", b"", response, self.version, "DELETE")
        finally:
            await self._client.aclose()

    # -- messages -----------------------------------------------------------------------------
    async def request(self, method: str, params: dict | None = None, headers: dict[str, str] | None = None) -> dict:
        """`headers` are extra modern routing headers (Mcp-Param-*); a legacy server is not sent them."""
        rid = next(self._ids)
        try:
            return await self._exchange(rid, method, params, headers, retry=method != "initialize")
        except asyncio.CancelledError:
            # a timeout or an interrupt: tell the server to stop (initialize must not be cancelled). A modern
            # server takes the closed response stream as the cancel: it has no cancel notification over HTTP.
            if not self.modern and method not in ("initialize", "server/discover"):
                await self._cancel(rid)
            raise

    async def notify(self, method: str, params: dict | None = None) -> None:
        body = jsonrpc.notification(method, params)
        response = await self._client.post(self.url, content=body, headers=self._headers())
        _log_after(self.wire, method, body, response, self.version)
        if not response.is_success:
            self._refuse(response, response.text)

    async def _cancel(self, rid: int) -> None:
        body = jsonrpc.notification("notifications/cancelled", {"requestId": rid, "reason": "cancelled by the client"})
        # best effort: the caller's cancellation matters more than the courtesy
        with contextlib.suppress(httpx.HTTPError, asyncio.CancelledError):
            response = await self._client.post(self.url, content=body, headers=self._headers(), timeout=_CANCEL_WAIT_S)
            _log_after(self.wire, "notifications/cancelled", body, response, self.version)

    async def _exchange(
        self, rid: int, method: str, params: dict | None, extra: dict[str, str] | None, *, retry: bool
    ) -> dict:
        self.notifications = []
        if self.modern or method == "server/discover":
            body = jsonrpc.request(rid, method, params, _META)
            headers = self._modern_headers(method, params, extra)
        else:
            body = jsonrpc.request(rid, method, params)
            initial = method == "initialize"
            headers = self._header_set(
                ("legacy", None if initial else self.session_id, None if initial else self.version)
            )
        # built here rather than by client.build_request, which re-merges URL, headers and cookies every time
        request = httpx.Request("POST", self._url, content=body, headers=headers)
        if self._client.cookies:  # cookies a server set (a load balancer's stickiness) still go back to it
            self._client.cookies.set_cookie_header(request)
        # wire log hook: a reference to what is sent, timestamps; the rest is done only when someone looks
        tap = self.wire.begin(method, body, request.headers) if self.wire is not None else None
        timer = None
        if tap is not None:
            if self._timed_connects:  # our backend reports new connections: nothing per request
                timer = CONNECT_TIMER.set(tap.connected)
            else:  # httpcore's trace hook, a dozen awaits per request
                request.extensions["trace"] = tap.trace
        try:
            response = await self._send(request)
        except BaseException as exc:
            if tap is not None:
                tap.end(self.version, exc)
            raise
        finally:
            if timer is not None:
                CONNECT_TIMER.reset(timer)
        if tap is not None:
            tap.answered(response.status_code, response.headers)
        failure: BaseException | None = None
        try:
            if response.status_code == 404 and self.session_id and retry:
                # the session expired: start a new one and send the request once more
                await response.aclose()
                await self.initialize()
                return await self._exchange(rid, method, params, extra, retry=False)
            if not response.is_success:
                text = (await response.aread()).decode("utf-8", "replace")
                if tap is not None:
                    tap.message(text, "text")
                self._refuse(response, text)
            if method == "initialize":
                self._take_session(response)
            result = await self._answer(response, rid, method, tap)
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

    async def _send(self, request: httpx.Request) -> httpx.Response:
        """The response, its body still unread. Straight to the connection pool when there is no proxy to choose:
        the client's auth, redirect, hook and cookie layers cost more per call than the rest of our code, and
        we use none of them but cookies, which are kept here."""
        if self._direct is None:
            return await self._client.send(request, stream=True)
        response = await self._direct.handle_async_request(request)
        response.request = request
        if "set-cookie" in response.headers:
            self._client.cookies.extract_cookies(response)
        return response

    def _modern_headers(self, method: str, params: dict | None, extra: dict[str, str] | None) -> httpx.Headers:
        key = _NAMED.get(method)
        name = params.get(key) if key is not None and params is not None else None
        headers = self._header_set(("modern", method, name if isinstance(name, str) else None))
        if extra:
            headers = httpx.Headers(headers)
            headers.update(extra)
        return headers

    def _header_set(self, key: tuple[str | None, ...]) -> httpx.Headers:
        """The headers of a POST: key ("legacy", session id, version) or ("modern", method, Mcp-Name)."""
        headers = self._header_sets.get(key)
        if headers is None:
            ours = {"Accept": _ACCEPT, "Content-Type": "application/json"}
            if key[0] == "modern":
                ours |= {"MCP-Protocol-Version": MODERN, "Mcp-Method": str(key[1])}
                if key[2] is not None:
                    ours["Mcp-Name"] = header_value(key[2])
            else:
                ours |= {"Mcp-Session-Id": key[1], "MCP-Protocol-Version": key[2]}
            headers = httpx.Headers(self._client.headers)
            headers.update({k: v for k, v in ours.items() if v is not None})
            if len(self._header_sets) < _MAX_HEADER_SETS:  # one per tool; a bound for servers with thousands
                self._header_sets[key] = headers
        return headers

    def _headers(self) -> dict[str, str]:
        """For the legacy session's own messages (notifications, answers to the server, DELETE)."""
        headers = {"Accept": _ACCEPT, "Content-Type": "application/json"}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def _take_session(self, response: httpx.Response) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid is not None and not (sid and all(0x21 <= ord(c) <= 0x7E for c in sid)):
            raise McpError(f"server sent an invalid Mcp-Session-Id {sid[:80]!r}")
        self.session_id = sid

    def _refuse(self, response: httpx.Response, body: str) -> None:
        code = response.status_code
        if response.is_redirect or 300 <= code < 400:
            where = response.headers.get("location", "(no Location header)")
            raise McpError(
                f"HTTP {code} redirect to {where}; redirects are refused so that configured headers never "
                "reach another endpoint: put the final URL in config/mcp.toml if you trust it"
            )
        error = jsonrpc.error_in_body(body) or {}
        detail = str(error.get("message") or "") or body.strip()[:_MAX_ERROR_BODY] or response.reason_phrase
        raise McpHttpError(f"HTTP {code} from {self.url}: {detail}", code, error.get("code"), error.get("data"))

    async def _answer(self, response: httpx.Response, rid: int, method: str, tap: Exchange | None) -> dict:
        kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind == "application/json":
            text = (await response.aread()).decode("utf-8", "replace")
            if tap is not None:
                tap.message(text, "json")
            for message in jsonrpc.decode(text):
                if jsonrpc.is_response(message) and message.get("id") == rid:
                    return jsonrpc.outcome(message)
            raise McpError(f"the JSON answer to {method} holds no response with id {rid}")
        if kind == "text/event-stream":
            return await self._stream(response, rid, method, tap)
        if response.status_code == 202 or not kind:
            raise McpError(f"server accepted {method} without answering it (HTTP {response.status_code}, no body type)")
        raise McpError(f"server answered {method} with unsupported content type {kind!r}")

    async def _stream(self, response: httpx.Response, rid: int, method: str, tap: Exchange | None) -> dict:
        parser = SseParser()
        chunks = _chunks_then_end(response)
        async for chunk in chunks:
            for event in parser.feed(chunk) if chunk is not None else parser.finish():
                if tap is not None:
                    tap.message(event.data, "sse")
                if event.event != "message":
                    continue
                for message in jsonrpc.decode(event.data):
                    if jsonrpc.is_response(message):
                        if message.get("id") == rid:
                            await _drain(chunks)
                            return jsonrpc.outcome(message)
                        continue  # an answer to something we no longer wait for (a cancelled call)
                    if "id" in message and "method" in message:
                        if not self.modern:  # a modern client never POSTs responses: asks come as results
                            await self._answer_server(message)
                    elif "method" in message and len(self.notifications) < 1000:
                        self.notifications.append(message)
        raise McpError(f"server closed the event stream before answering {method}")

    async def _answer_server(self, message: dict) -> None:
        """Requests from the server: ping is answered; the rest (sampling, roots...) we do not offer."""
        if message["method"] == "ping":
            body = jsonrpc.response(message["id"], {})
        else:
            error = {"code": -32601, "message": f"cireil does not support {message['method']}"}
            body = jsonrpc.response(message["id"], error=error)
        answer = await self._client.post(self.url, content=body, headers=self._headers())
        _log_after(self.wire, f"(answer to {message['method']})", body, answer, self.version)
        await answer.aclose()


def _direct_pool() -> httpx.AsyncHTTPTransport | None:
    """A connection pool shared by the client and the hot path; None when proxy settings in the environment
    leave the choice of route to the client (which honours HTTP(S)_PROXY, ALL_PROXY and NO_PROXY)."""
    if any(scheme in urllib.request.getproxies() for scheme in ("http", "https", "all")):
        return None
    from ..netbackend import fast_transport

    return fast_transport()


async def _drain(chunks: AsyncIterator[str | None]) -> None:
    """Read the little that follows the answer (the stream's end), so the connection can be reused.

    A server that keeps the stream open gets a short grace, then the connection is dropped instead.
    """
    with contextlib.suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout(_DRAIN_S):
            async for _ in chunks:
                pass


async def _chunks_then_end(response: httpx.Response) -> AsyncIterator[str | None]:
    """The stream's text, then None for its end (so a trailing CR still ends the last line)."""
    async for chunk in response.aiter_text():
        yield chunk
    yield None


def _log_after(
    wire: WireLog | None, label: str, body: bytes, response: httpx.Response, version: str | None, verb: str = "POST"
) -> None:
    """The wire log entry of a message off the call path (notifications, DELETE), recorded once answered."""
    tap = wire.begin(label, body, response.request.headers, verb) if wire is not None else None
    if tap is not None:
        tap.answered(response.status_code, response.headers)
        with contextlib.suppress(httpx.ResponseNotRead):  # a non-streamed answer has its body read already
            if response.content:
                tap.message(response.text, "text")
        tap.end(version)
