"""One TCP (or TLS) connection as a bounded byte buffer with the few reads an HTTP/1.1 client needs.

An asyncio Protocol rather than StreamReader/StreamWriter: the client must see bytes a server sent
beyond its answer (they make the connection unusable for the next request), and must stop reading
from the socket while the buffer is full, so that a server sending faster than the caller consumes
never grows memory past `HIGH_WATER`.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Callable

HIGH_WATER = 256 * 1024  # bytes buffered before reading from the socket pauses
LOW_WATER = 64 * 1024


class HttpError(Exception):
    """The server could not be reached, or the connection failed under a request."""


class HttpProtocolError(HttpError):
    """The server broke HTTP/1.1 (a lying Content-Length, bad chunking, endless headers...)."""


class Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._paused = False
        self._write_paused = False
        self.eof = False
        self.lost: BaseException | None = None
        self.received = 0  # bytes ever received: a request that got none on a reused connection was never seen

    # -- asyncio callbacks ----------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self.received += len(data)
        if len(self._buffer) > HIGH_WATER and not self._paused:
            self._paused = True
            self._transport.pause_reading()  # type: ignore[union-attr]
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close our side too: nothing more can be asked on a half-closed connection

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.lost = exc
        self._wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- use ------------------------------------------------------------------------------------------------
    @property
    def idle_ok(self) -> bool:
        """Fit for another request: open, and nothing unasked-for waiting in the buffer."""
        return not self.eof and not self._buffer and self._transport is not None and not self._transport.is_closing()

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    async def write(self, data: bytes) -> None:
        if self.eof or self._transport is None or self._transport.is_closing():
            raise HttpError("the connection closed before the request was sent")
        self._transport.write(data)
        if self._write_paused:  # a big request body: wait until the socket takes it
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
            if self.eof:
                raise HttpError("the connection closed while the request was sent")

    async def _fill(self) -> None:
        """Wait for more bytes (or the end of the connection)."""
        if self.eof:
            raise HttpProtocolError(self._closed_message())
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _closed_message(self) -> str:
        why = f" ({self.lost})" if self.lost is not None else ""
        return f"the server closed the connection{why}"

    def _consumed(self) -> None:
        if self._paused and len(self._buffer) < LOW_WATER:
            self._paused = False
            self._transport.resume_reading()  # type: ignore[union-attr]

    async def read_until(self, separator: bytes, limit: int, what: str) -> bytes:
        """Bytes up to and including `separator`; HttpProtocolError past `limit` bytes or at the end."""
        start = 0
        while True:
            found = self._buffer.find(separator, start)
            if found != -1:
                end = found + len(separator)
                if end > limit:
                    break
                data = bytes(self._buffer[:end])
                del self._buffer[:end]
                self._consumed()
                return data
            if len(self._buffer) > limit:
                break
            start = max(0, len(self._buffer) - len(separator) + 1)
            if self.eof:
                if self._buffer:
                    raise HttpProtocolError(f"{self._closed_message()} in the middle of {what}")
                raise HttpProtocolError(f"{self._closed_message()} before {what}")
            await self._fill()
        raise HttpProtocolError(f"{what} is longer than {limit} bytes")

    async def read_some(self, most: int) -> bytes:
        """Up to `most` bytes, at least one; b"" at the end of the connection."""
        while not self._buffer:
            if self.eof:
                return b""
            await self._fill()
        data = bytes(self._buffer[:most])
        del self._buffer[:most]
        self._consumed()
        return data

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Drop the connection at once (a cancelled or broken exchange: what is in flight is unwanted)."""
        if self._transport is not None:
            self._transport.abort()
        self.eof = True


async def connect(
    host: str, port: int, context: ssl.SSLContext | None, on_connect: Callable[[float], None] | None = None
) -> Connection:
    """A new connection; `on_connect` gets the time it took in ms (the wire log's connect timing)."""
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    try:
        _, conn = await loop.create_connection(
            Connection, host, port, ssl=context, server_hostname=host if context is not None else None
        )
    except ssl.SSLError as exc:
        raise HttpError(f"TLS handshake with {host}:{port} failed: {exc}") from None
    except OSError as exc:
        raise HttpError(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None
    if on_connect is not None:
        on_connect((time.perf_counter() - started) * 1000)
    return conn


async def read_limited(chunks: AsyncIterator[bytes], limit: int) -> bytes | None:
    """A whole body from its chunks, or None once it passes `limit` bytes (the rest is never read)."""
    parts: list[bytes] = []
    size = 0
    async for data in chunks:
        size += len(data)
        if size > limit:
            return None
        parts.append(data)
    return b"".join(parts)
