"""HTTP connections on plain asyncio streams under httpx, for model requests.

httpx talks to the network through httpcore, and httpcore's default backend on asyncio is anyio,
whose cancel scopes and stream wrappers cost more per request than the rest of an MCP call
(bench/mcp.py measured the client's own CPU per call dropping by about a fifth without them). This
module implements httpcore's documented network-backend interface on asyncio's own streams, with
the same exception mapping the anyio backend has, and `fast_transport()` puts it under an httpx
transport. Should a future httpx build its pool differently, `fast_transport()` returns the stock
transport instead: slower, never broken. (MCP calls go further and skip httpx: mcp/h1.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx


@contextlib.contextmanager
def _mapped(timeout_exc: type[Exception], error_exc: type[Exception]) -> Iterator[None]:
    try:
        yield
    except TimeoutError as exc:
        raise timeout_exc(str(exc) or "timed out") from exc
    except (OSError, ssl.SSLError, EOFError) as exc:
        raise error_exc(str(exc) or type(exc).__name__) from exc


def _deadline(timeout: float | None) -> Any:
    return asyncio.timeout(timeout) if timeout is not None else contextlib.nullcontext()


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            async with _deadline(timeout):
                return await self._reader.read(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            async with _deadline(timeout):
                self._writer.write(buffer)
                await self._writer.drain()

    async def aclose(self) -> None:
        self._writer.close()
        # a peer that is gone, or a cancelled caller, must not turn closing into an error
        with contextlib.suppress(OSError, ssl.SSLError, asyncio.CancelledError, TimeoutError):
            async with asyncio.timeout(1.0):
                await self._writer.wait_closed()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            try:
                async with _deadline(timeout):
                    await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
            except BaseException:
                await self.aclose()
                raise
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "is_readable":
            # the pool asks before reusing an idle connection: readable then means the server closed it
            if self._reader.at_eof() or self._writer.is_closing():
                return True
            sock = self._writer.get_extra_info("socket")
            if sock is None or sock.fileno() < 0:
                return True
            return bool(select.select([sock], [], [], 0)[0])
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with _deadline(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=(local_address, 0) if local_address else None
                )
        sock = writer.get_extra_info("socket")
        with contextlib.suppress(OSError):  # requests are small writes: never wait for Nagle
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for option in socket_options or ():
            sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with _deadline(timeout):
                reader, writer = await asyncio.open_unix_connection(path)
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def fast_transport(**options: Any) -> httpx.AsyncHTTPTransport:
    """An httpx transport whose connections run on AsyncioBackend (`options` as for AsyncHTTPTransport:
    verify, http1, limits...). Not for proxies: callers use it only when no proxy is configured."""
    transport = httpx.AsyncHTTPTransport(**options)
    pool = getattr(transport, "_pool", None)
    # httpcore takes the backend as a constructor argument (public API) that httpx does not pass on;
    # swapping it on the fresh, unused pool is the one private touch. Another layout keeps the stock one.
    if type(pool) is httpcore.AsyncConnectionPool and hasattr(pool, "_network_backend"):
        pool._network_backend = AsyncioBackend()
    return transport


def uses_asyncio_backend(transport: httpx.AsyncBaseTransport) -> bool:
    pool = getattr(transport, "_pool", None)
    return isinstance(getattr(pool, "_network_backend", None), AsyncioBackend)
