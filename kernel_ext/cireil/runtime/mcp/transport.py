"""Streamable HTTP (legacy revisions 2025-03-26 .. 2025-11-25): one POST per message, JSON or SSE answers.

Deadlines are the caller's (asyncio.timeout around whole operations): httpx only has per-read
timeouts, which a server's keepalive comments would reset forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

import httpx

from . import jsonrpc
from .errors import McpError
from .sse import SseParser

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
CLIENT_INFO = {"name": "cireil", "version": "0"}
_ACCEPT = "application/json, text/event-stream"
_CANCEL_WAIT_S = 2.0
_MAX_ERROR_BODY = 2000
_DRAIN_S = 0.05


class Transport:
    """One server connection: the session it negotiated and the HTTP client it talks through."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url = url
        # follow_redirects=False: a redirect would carry the configured credentials to another endpoint
        self._client = httpx.AsyncClient(follow_redirects=False, timeout=None, headers=headers)
        self._ids = itertools.count(1)
        self.session_id: str | None = None
        self.version: str | None = None
        self.init_result: dict[str, Any] = {}
        self.notifications: list[dict] = []  # the latest request's server notifications (progress, logs)

    # -- lifecycle ----------------------------------------------------------------------------
    async def initialize(self) -> dict:
        self.session_id = self.version = None
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
                    await self._client.delete(self.url, headers=self._headers(), timeout=_CANCEL_WAIT_S)
        finally:
            await self._client.aclose()

    # -- messages -----------------------------------------------------------------------------
    async def request(self, method: str, params: dict | None = None) -> dict:
        rid = next(self._ids)
        try:
            return await self._exchange(rid, method, params, retry=method != "initialize")
        except asyncio.CancelledError:
            # a timeout or an interrupt: tell the server to stop (initialize must not be cancelled)
            if method != "initialize":
                await self._cancel(rid)
            raise

    async def notify(self, method: str, params: dict | None = None) -> None:
        body = jsonrpc.notification(method, params)
        response = await self._client.post(self.url, content=body, headers=self._headers())
        if not response.is_success:
            self._refuse(response, response.text)

    async def _cancel(self, rid: int) -> None:
        body = jsonrpc.notification("notifications/cancelled", {"requestId": rid, "reason": "cancelled by the client"})
        # best effort: the caller's cancellation matters more than the courtesy
        with contextlib.suppress(httpx.HTTPError, asyncio.CancelledError):
            await self._client.post(self.url, content=body, headers=self._headers(), timeout=_CANCEL_WAIT_S)

    async def _exchange(self, rid: int, method: str, params: dict | None, *, retry: bool) -> dict:
        self.notifications = []
        request = self._client.build_request(
            "POST", self.url, content=jsonrpc.request(rid, method, params), headers=self._headers(method)
        )
        response = await self._client.send(request, stream=True)
        try:
            if response.status_code == 404 and self.session_id and retry:
                # the session expired: start a new one and send the request once more
                await response.aclose()
                await self.initialize()
                return await self._exchange(rid, method, params, retry=False)
            if not response.is_success:
                self._refuse(response, (await response.aread()).decode("utf-8", "replace"))
            if method == "initialize":
                self._take_session(response)
            return await self._answer(response, rid, method)
        finally:
            await response.aclose()

    def _headers(self, method: str = "") -> dict[str, str]:
        headers = {"Accept": _ACCEPT, "Content-Type": "application/json"}
        if method != "initialize":
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
        detail = jsonrpc.error_in_body(body) or body.strip()[:_MAX_ERROR_BODY] or response.reason_phrase
        raise McpError(f"HTTP {code} from {self.url}: {detail}")

    async def _answer(self, response: httpx.Response, rid: int, method: str) -> dict:
        kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind == "application/json":
            text = (await response.aread()).decode("utf-8", "replace")
            for message in jsonrpc.decode(text):
                if jsonrpc.is_response(message) and message.get("id") == rid:
                    return jsonrpc.outcome(message)
            raise McpError(f"the JSON answer to {method} holds no response with id {rid}")
        if kind == "text/event-stream":
            return await self._stream(response, rid, method)
        if response.status_code == 202 or not kind:
            raise McpError(f"server accepted {method} without answering it (HTTP {response.status_code}, no body type)")
        raise McpError(f"server answered {method} with unsupported content type {kind!r}")

    async def _stream(self, response: httpx.Response, rid: int, method: str) -> dict:
        parser = SseParser()
        chunks = _chunks_then_end(response)
        async for chunk in chunks:
            for event in parser.feed(chunk) if chunk is not None else parser.finish():
                if event.event != "message":
                    continue
                for message in jsonrpc.decode(event.data):
                    if jsonrpc.is_response(message):
                        if message.get("id") == rid:
                            await _drain(chunks)
                            return jsonrpc.outcome(message)
                        continue  # an answer to something we no longer wait for (a cancelled call)
                    if "id" in message and "method" in message:
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
        await answer.aclose()


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
