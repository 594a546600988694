"""The MCP transport's HTTP through httpx, for when proxy settings in the environment choose the route.

httpx honours HTTP(S)_PROXY, ALL_PROXY and NO_PROXY (CONNECT tunnels, absolute-form requests); the
direct path (h1.py) does not speak to proxies. This adapter gives the transport the same calls and the
same failures (h1conn.HttpError) as the direct path, with redirects never followed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from .h1conn import HttpError, HttpProtocolError, read_limited

_PROTOCOL = (httpx.RemoteProtocolError, httpx.DecodingError, httpx.LocalProtocolError)


def _mapped(exc: httpx.HTTPError) -> HttpError:
    kind = HttpProtocolError if isinstance(exc, _PROTOCOL) else HttpError
    return kind(str(exc) or type(exc).__name__)


class ProxiedResponse:
    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.reason = response.reason_phrase
        self.headers = [(k.lower(), v) for k, v in response.headers.multi_items()]

    def get(self, name: str) -> str | None:
        return self._response.headers.get(name)

    def get_all(self, name: str) -> list[str]:
        return self._response.headers.get_list(name)

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for data in self._response.aiter_bytes():
                yield data
        except httpx.HTTPError as exc:
            raise _mapped(exc) from None

    async def read(self, limit: int) -> bytes | None:
        return await read_limited(self.chunks(), limit)

    async def aclose(self) -> None:
        await self._response.aclose()


class ProxiedHttp:
    """Requests to one URL through an httpx client that reads proxy settings from the environment."""

    timed_connects = False  # connect times come from httpcore's trace hook instead

    def __init__(self, url: str) -> None:
        self._url = httpx.URL(url)
        self._client = httpx.AsyncClient(follow_redirects=False, timeout=None)

    async def send(self, method: str, fields: list[tuple[str, str]], body: bytes, tap: Any = None) -> ProxiedResponse:
        """`tap` (a wire log exchange) gets connect times through httpcore's trace hook."""
        request = httpx.Request(method, self._url, content=body if method != "GET" else None, headers=fields)
        if tap is not None:
            request.extensions["trace"] = tap.trace
        try:
            return ProxiedResponse(await self._client.send(request, stream=True))
        except httpx.HTTPError as exc:
            raise _mapped(exc) from None

    async def aclose(self) -> None:
        await self._client.aclose()
