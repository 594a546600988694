"""HTTP/1.1 straight on pooled keep-alive connections to one MCP endpoint (plain or TLS).

httpx/httpcore/h11 spent more client time per MCP call than everything else together (header
objects, pool locks under anyio cancel scopes, h11's event machinery). An MCP client needs little of
HTTP: POST (GET, DELETE) to one fixed URL, status and headers back, a body framed by Content-Length,
chunking or the connection's end. That is done here, strictly:

- the response head is bounded (`MAX_HEAD` bytes, `MAX_FIELDS` fields); obsolete line folding, bare
  CR/LF/NUL, malformed status lines and field names are errors;
- a Content-Length the server does not honour (the connection ends early) is an error; bytes sent
  beyond it make the connection unusable (it is closed, never reused); differing Content-Length values,
  or Transfer-Encoding other than chunked, are errors; chunk sizes are strict hex with bounded lines and
  each chunk must end in CRLF;
- gzip/deflate bodies are inflated in bounded steps, so a caller's size cap holds for what comes out;
- a response not read to its end (a cancelled call, a capped body) closes its connection.

Redirects are never followed: a 3xx is handed back like any status (the transport refuses it). Deadlines
are the caller's (asyncio.timeout around the operation); cancellation aborts the connection in use.
"""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import unquote

from ..base.inflate import CorruptData, Inflate
from .h1conn import Connection, HttpError, HttpProtocolError, connect, read_limited

MAX_HEAD = 64 * 1024  # bytes of a response's status line and header fields
MAX_FIELDS = 256
MAX_CHUNK_LINE = 1024  # a chunk size line with its extensions
MAX_INTERIM = 8  # 1xx answers skipped before the real one
MAX_IDLE = 8  # pooled idle connections kept per endpoint
READ_SIZE = 64 * 1024  # the most bytes handed out at once (also inflated output per step)
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")
_DIGITS = re.compile(r"[0-9]{1,18}")
_BAD_IN_LINE = re.compile(rb"[\r\n\x00]")


class Endpoint:
    """Where requests go: scheme, host, port, the request target and the Host header, parsed once."""

    def __init__(self, url: str) -> None:
        import httpx  # its URL parser is the one urlcheck validated mcp.toml against; nothing else of it is used

        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https"):
            raise HttpError(f"{url!r} is not an http:// or https:// URL")
        self.tls = parsed.scheme == "https"
        self.host = parsed.raw_host.decode("ascii")
        self.port = parsed.port or (443 if self.tls else 80)
        self.target = parsed.raw_path.decode("ascii") or "/"
        self.host_header = parsed.netloc.decode("ascii")
        self.basic: str | None = None  # credentials in the URL go as Basic authorization (as httpx.AsyncClient does)
        if parsed.userinfo:
            user, _, password = parsed.userinfo.decode("ascii").partition(":")
            pair = f"{unquote(user)}:{unquote(password)}".encode()
            self.basic = "Basic " + base64.b64encode(pair).decode("ascii")


_CONTEXT: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    """httpx's default context (certifi's roots, its cipher and version rules), made once per process."""
    global _CONTEXT
    if _CONTEXT is None:
        import httpx

        _CONTEXT = httpx.create_ssl_context()
    return _CONTEXT


class Response:
    """Status and header fields (names in lower case, in order) of one answer; its body read on demand."""

    __slots__ = ("_conn", "_done", "_keep", "_length", "_mode", "_pool", "encoding", "headers", "reason", "status")

    def __init__(self, pool: Pool, conn: Connection, status: int, reason: str, headers: list[tuple[str, str]]) -> None:
        self._pool, self._conn = pool, conn
        self.status, self.reason, self.headers = status, reason, headers
        self._done = False
        self._mode, self._length, self._keep = "none", 0, False
        self.encoding = ""

    def get(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None

    def get_all(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key == name]

    def chunks(self) -> AsyncIterator[bytes]:
        """The body, unframed and inflated, in pieces of at most READ_SIZE bytes."""
        return self._inflated() if self.encoding else self._framed()

    async def _inflated(self) -> AsyncIterator[bytes]:
        inflater = Inflate(self.encoding)
        async for data in self._framed():
            try:
                for out in inflater.feed(data, READ_SIZE):
                    yield out
            except CorruptData as exc:
                raise HttpProtocolError(f"the {self.encoding} body is corrupt ({exc.detail})") from None
        if not inflater.eof:
            raise HttpProtocolError(f"the {self.encoding} body ends before its compressed stream does")

    async def read(self, limit: int) -> bytes | None:
        """The whole body, or None once it passes `limit` bytes (the connection is then closed, unread rest)."""
        return await read_limited(self.chunks(), limit)

    async def _framed(self) -> AsyncIterator[bytes]:
        conn = self._conn
        if self._mode == "length":
            left = self._length
            while left:
                data = await conn.read_some(min(left, READ_SIZE))
                if not data:
                    raise HttpProtocolError(
                        f"the server closed the connection after {self._length - left} of the {self._length} "
                        "body bytes its Content-Length announced"
                    )
                left -= len(data)
                yield data
        elif self._mode == "chunked":
            async for data in _chunked(conn):
                yield data
        elif self._mode == "close":
            while data := await conn.read_some(READ_SIZE):
                yield data
        self._done = True

    async def aclose(self) -> None:
        """Give the connection back when the body was read to its end and the server allows; else close it."""
        conn = self._conn
        if self._done and self._keep and conn.idle_ok:
            self._pool.release(conn)
        elif self._done:
            conn.close()
        else:
            conn.abort()


async def _chunked(conn: Connection) -> AsyncIterator[bytes]:
    while True:
        line = await conn.read_until(b"\r\n", MAX_CHUNK_LINE, "a chunk size line")
        size_text = line[:-2].split(b";", 1)[0].strip(b" \t")
        if not _HEX.fullmatch(size_text):
            raise HttpProtocolError(f"bad chunk size line {line[:40]!r}")
        size = int(size_text, 16)
        if size == 0:
            break
        left = size
        while left:
            data = await conn.read_some(min(left, READ_SIZE))
            if not data:
                raise HttpProtocolError(f"the server closed the connection inside a chunk ({size - left} of {size})")
            left -= len(data)
            yield data
        end = b""
        while len(end) < 2:
            more = await conn.read_some(2 - len(end))
            if not more:
                raise HttpProtocolError("the server closed the connection at the end of a chunk")
            end += more
        if end != b"\r\n":
            raise HttpProtocolError(f"a chunk of {size} bytes is not followed by CRLF: its size line is wrong")
    trailer = 0
    while (line := await conn.read_until(b"\r\n", MAX_HEAD, "the chunked trailer")) != b"\r\n":
        trailer += len(line)  # trailer fields are read past, never used
        if trailer > MAX_HEAD:
            raise HttpProtocolError(f"the chunked trailer is longer than {MAX_HEAD} bytes")


def _parse_head(head: bytes) -> tuple[bool, int, str, list[tuple[str, str]]]:
    """(HTTP/1.1?, status, reason, fields) of a response head ending in CRLF CRLF."""
    lines = head[:-4].split(b"\r\n")
    status_line = lines[0]
    parts = status_line.split(b" ", 2)
    if (
        len(parts) < 2
        or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0")
        or len(parts[1]) != 3
        or not parts[1].isdigit()
        or _BAD_IN_LINE.search(status_line)
    ):
        raise HttpProtocolError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
    if len(lines) - 1 > MAX_FIELDS:
        raise HttpProtocolError(f"more than {MAX_FIELDS} header fields")
    fields: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name) or _BAD_IN_LINE.search(value):
            what = "folded (obsolete line folding)" if line[:1] in (b" ", b"\t") else "malformed"
            raise HttpProtocolError(f"{what} header field {line[:80]!r}")
        fields.append((name.decode("ascii").lower(), value.strip(b" \t").decode("latin-1")))
    reason = parts[2].decode("latin-1") if len(parts) == 3 else ""
    return parts[0] == b"HTTP/1.1", int(parts[1]), reason, fields


def _frame(response: Response, http11: bool, method: str) -> None:
    """How the body is delimited, whether the connection may be reused, how the body is encoded."""
    tokens = {t.strip().lower() for v in response.get_all("connection") for t in v.split(",")}
    keep = "close" not in tokens if http11 else "keep-alive" in tokens
    status = response.status
    transfer = [c.strip().lower() for v in response.get_all("transfer-encoding") for c in v.split(",") if c.strip()]
    lengths = {v.strip() for value in response.get_all("content-length") for v in value.split(",")}
    if method == "HEAD" or status in (204, 304):
        mode, length = "none", 0
    elif transfer:
        if transfer != ["chunked"]:
            raise HttpProtocolError(f"Transfer-Encoding {', '.join(transfer)!r} is not supported (only chunked)")
        mode, length = "chunked", 0
        keep = keep and not lengths  # both framings at once: a smuggling attempt or a broken proxy
    elif lengths:
        (text, *others) = sorted(lengths)
        if others or not _DIGITS.fullmatch(text):
            raise HttpProtocolError(f"invalid Content-Length {', '.join(sorted(lengths))[:80]!r}")
        mode, length = "length", int(text)
    else:
        mode, length, keep = "close", 0, False
    coding = (response.get("content-encoding") or "").strip().lower()
    if coding not in ("", "identity", "gzip", "deflate"):
        raise HttpProtocolError(f"Content-Encoding {coding[:40]!r} is not supported (gzip and deflate are)")
    response.encoding = coding if coding in ("gzip", "deflate") else ""
    response._mode, response._length, response._keep = mode, length, keep
    response._done = mode == "none"


class Pool:
    """Keep-alive connections to one endpoint; each request takes an idle one or opens a new one."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._idle: list[Connection] = []
        self._closed = False

    def release(self, conn: Connection) -> None:
        if self._closed or len(self._idle) >= MAX_IDLE:
            conn.close()
        else:
            self._idle.append(conn)

    async def send(
        self, method: str, head: bytes, body: bytes, on_connect: Callable[[float], None] | None = None
    ) -> Response:
        """Write one request (`head` ends with the blank line) and read the answer's head.

        A pooled connection the server closes just as it is reused (its keep-alive timeout) shows as an end
        with no answer byte at all; the request then goes once more, on a new connection. That is the one
        retry: a new connection that ends without an answer is an error (the server may have seen it).
        """
        if self._closed:
            raise HttpError("the connection pool is closed")
        while True:
            conn = self._idle.pop() if self._idle else None
            if conn is None or conn.idle_ok:
                break
            conn.close()
        reused = conn is not None
        if conn is None:
            conn = await self._connect(on_connect)
        mark = conn.received
        try:
            return await self._exchange(conn, method, head + body)
        except HttpError:
            conn.abort()
            if not (reused and conn.received == mark):
                raise
        except BaseException:
            conn.abort()
            raise
        conn = await self._connect(on_connect)
        try:
            return await self._exchange(conn, method, head + body)
        except BaseException:
            conn.abort()
            raise

    async def _connect(self, on_connect: Callable[[float], None] | None) -> Connection:
        end = self.endpoint
        return await connect(end.host, end.port, _tls_context() if end.tls else None, on_connect)

    async def _exchange(self, conn: Connection, method: str, data: bytes) -> Response:
        await conn.write(data)
        for _ in range(MAX_INTERIM + 1):
            head = await conn.read_until(b"\r\n\r\n", MAX_HEAD, "the response headers")
            http11, status, reason, fields = _parse_head(head)
            if status == 101 or status >= 200:
                break
        else:
            raise HttpProtocolError(f"more than {MAX_INTERIM} interim (1xx) answers")
        if status == 101:
            raise HttpProtocolError("the server switched protocols (101), which was not asked for")
        response = Response(self, conn, status, reason, fields)
        _frame(response, http11, method)
        return response

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        await asyncio.sleep(0)  # let the transports run their close callbacks


class DirectHttp:
    """Requests to one URL on the pool: header fields in, `Response` out (no proxy: see viahttpx.py)."""

    timed_connects = True  # new connections report their connect time to the caller's tap

    def __init__(self, url: str) -> None:
        self.endpoint = Endpoint(url)
        self._pool = Pool(self.endpoint)
        self._line = f"{{}} {self.endpoint.target} HTTP/1.1\r\nHost: {self.endpoint.host_header}\r\n"

    async def send(self, method: str, fields: list[tuple[str, str]], body: bytes, tap: Any = None) -> Response:
        parts = [self._line.format(method)]
        for name, value in fields:
            if "\r" in value or "\n" in value or "\0" in value:
                raise HttpError(f"header {name} holds a line break or NUL; it cannot be sent")
            parts.append(f"{name}: {value}\r\n")
        if method != "GET":
            parts.append(f"Content-Length: {len(body)}\r\n")
        parts.append("\r\n")
        head = "".join(parts).encode()
        return await self._pool.send(method, head, body, tap.connected if tap is not None else None)

    async def aclose(self) -> None:
        await self._pool.aclose()
