"""The MCP transport's own HTTP/1.1 (mcp/h1.py) against servers that lie: each case a real loopback socket.

Lying Content-Length (short, long, conflicting), endless and malformed headers, bad chunking, a slowloris
server, connections closed mid-body or while idle, compressed bodies and bombs, TLS trust.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import ssl
import time
import zlib
from collections.abc import Callable

import pytest

from cireil.runtime.mcp import h1
from cireil.runtime.mcp.h1 import DirectHttp
from cireil.runtime.mcp.h1conn import HttpError, HttpProtocolError
from mcp_peers.rawserver import RawServer, answer

FIELDS = [("Accept", "application/json"), ("Content-Type", "application/json")]


def serving(reply: Callable[[socket.socket, int], None]) -> RawServer:
    return RawServer(reply)


def each_request(data: Callable[[int], bytes], *, close: bool = False) -> Callable[[socket.socket, int], None]:
    """A script answering every request on a connection with data(k), k counting requests of the server."""
    count = [0]

    def script(conn: socket.socket, n: int) -> None:
        while server_of[0].read_request(conn) is not None:
            # counted before the answer goes out: the client's next request, on a new connection, may reach
            # another thread of the server before this one runs again
            k = count[0]
            count[0] += 1
            conn.sendall(data(k))
            if close:
                return

    return script


server_of: list[RawServer] = []


@pytest.fixture
def raw():
    made: list[RawServer] = []

    def make(script: Callable[[socket.socket, int], None]) -> RawServer:
        server = RawServer(script)
        server_of[:] = [server]
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def fetch(url: str, times: int = 1, limit: int = 1 << 20, deadline: float = 10.0) -> list[tuple[int, bytes | None]]:
    async def go() -> list[tuple[int, bytes | None]]:
        http = DirectHttp(url)
        out = []
        try:
            for _ in range(times):
                async with asyncio.timeout(deadline):
                    response = await http.send("POST", FIELDS, b"{}")
                    try:
                        out.append((response.status, await response.read(limit)))
                    finally:
                        await response.aclose()
        finally:
            await http.aclose()
        return out

    return asyncio.run(go())


# -- keep-alive ------------------------------------------------------------------------------------------------
def test_requests_share_one_keep_alive_connection(raw):
    server = raw(each_request(lambda k: answer("200 OK", {}, f"answer {k}".encode())))
    assert fetch(server.url(), times=4) == [(200, f"answer {k}".encode()) for k in range(4)]
    assert server.connections == 1
    head = server.requests[0].split(b"\r\n\r\n")[0].decode()
    assert head.startswith("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:") and "Content-Length: 2" in head


def test_a_connection_the_server_closed_while_idle_is_replaced(raw):
    # no Connection: close said: the client finds out when it next uses the connection (or just before)
    server = raw(each_request(lambda k: answer("200 OK", {}, b"ok"), close=True))
    assert fetch(server.url(), times=3) == [(200, b"ok")] * 3
    assert server.connections == 3


def test_connection_close_is_honoured(raw):
    server = raw(each_request(lambda k: answer("200 OK", {"Connection": "close"}, b"ok")))
    assert fetch(server.url(), times=2) == [(200, b"ok")] * 2
    assert server.connections == 2


# -- lying framing ---------------------------------------------------------------------------------------------
def test_a_content_length_longer_than_the_body_is_an_error(raw):
    server = raw(each_request(lambda k: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789", close=True))
    with pytest.raises(HttpProtocolError, match="closed the connection after 10 of the 100 body bytes"):
        fetch(server.url())


def test_bytes_beyond_the_content_length_spoil_the_connection(raw):
    forged = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforged"
    server = raw(each_request(lambda k: answer("200 OK", {}, b"ok") + forged))
    # the forged second answer is never taken for the answer to the second request
    assert fetch(server.url(), times=2) == [(200, b"ok"), (200, b"ok")]
    assert server.connections == 2


def test_differing_content_lengths_are_refused(raw):
    server = raw(each_request(lambda k: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk"))
    with pytest.raises(HttpProtocolError, match="invalid Content-Length '2, 3'"):
        fetch(server.url())


def test_chunked_wins_over_content_length_and_the_connection_is_not_reused(raw):
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
    server = raw(each_request(lambda k: data))
    assert fetch(server.url(), times=2) == [(200, b"ok")] * 2
    assert server.connections == 2


def test_transfer_codings_other_than_chunked_are_refused(raw):
    server = raw(each_request(lambda k: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"))
    with pytest.raises(HttpProtocolError, match="Transfer-Encoding 'gzip, chunked' is not supported"):
        fetch(server.url())


def test_a_body_until_close_is_read_and_the_connection_dropped(raw):
    server = raw(each_request(lambda k: b"HTTP/1.1 200 OK\r\n\r\nuntil the end", close=True))
    assert fetch(server.url(), times=2) == [(200, b"until the end")] * 2
    assert server.connections == 2


@pytest.mark.parametrize(
    ("chunks", "error"),
    [
        (b"zz\r\nab\r\n0\r\n\r\n", "bad chunk size line b'zz"),
        (b"-1\r\nab\r\n0\r\n\r\n", "bad chunk size line"),
        (b"0x2\r\nab\r\n0\r\n\r\n", "bad chunk size line"),
        (b"1_0\r\nab\r\n0\r\n\r\n", "bad chunk size line"),
        (b"fffffffffffffffff\r\n", "bad chunk size line"),  # 17 hex digits: more than any body
        (b"2\r\nabcd\r\n0\r\n\r\n", "a chunk of 2 bytes is not followed by CRLF"),
        (b"5\r\nab", "closed the connection inside a chunk (2 of 5)"),
        (b"2" + b" " * 2000 + b"\r\nab\r\n", "a chunk size line is longer than 1024 bytes"),
    ],
)
def test_bad_chunking_is_an_error(raw, chunks, error):
    server = raw(each_request(lambda k: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks, close=True))
    with pytest.raises(HttpProtocolError, match=error.replace("(", r"\(").replace(")", r"\)")):
        fetch(server.url())


def test_chunk_extensions_and_trailers_are_read_past(raw):
    data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;name=x\r\nok\r\n1\r\n!\r\n0\r\nX-Trailer: t\r\n\r\n"
    server = raw(each_request(lambda k: data))
    assert fetch(server.url(), times=2) == [(200, b"ok!")] * 2
    assert server.connections == 1  # read to its very end: the connection stays usable


# -- headers ---------------------------------------------------------------------------------------------------
def test_endless_headers_stop_at_the_bound(raw):
    def script(conn: socket.socket, n: int) -> None:
        server_of[0].read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        for _ in range(100_000):  # 1.2 MB of header fields, never ending the head
            conn.sendall(b"X-Endless: yes\r\n")

    server = raw(script)
    with pytest.raises(HttpProtocolError, match="the response headers is longer than 65536 bytes"):
        fetch(server.url())
    assert server.gone.wait(10)  # and the connection was dropped rather than read on


def test_too_many_header_fields_are_refused(raw):
    fields = "".join(f"X-F{i}: v\r\n" for i in range(300)).encode()
    server = raw(each_request(lambda k: b"HTTP/1.1 200 OK\r\n" + fields + b"Content-Length: 0\r\n\r\n"))
    with pytest.raises(HttpProtocolError, match="more than 256 header fields"):
        fetch(server.url())


@pytest.mark.parametrize(
    ("head", "error"),
    [
        (b"HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n", "folded"),
        (b"HTTP/1.1 200 OK\r\nBad Name: v\r\nContent-Length: 0\r\n\r\n", "malformed header field"),
        (b"HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n", "malformed header field"),
        (b"HTTP/2 200\r\nContent-Length: 0\r\n\r\n", "not an HTTP/1.1 status line"),
        (b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n", "not an HTTP/1.1 status line"),
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP/1.1 status line"),
        (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "switched protocols"),
    ],
)
def test_malformed_heads_are_refused(raw, head, error):
    server = raw(each_request(lambda k: head))
    with pytest.raises(HttpProtocolError, match=error):
        fetch(server.url())


def test_a_head_with_bare_line_feeds_is_not_taken_for_one(raw):
    server = raw(each_request(lambda k: b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", close=True))
    with pytest.raises(HttpProtocolError, match="closed the connection in the middle of the response headers"):
        fetch(server.url())


def test_interim_answers_are_skipped(raw):
    server = raw(each_request(lambda k: b"HTTP/1.1 100 Continue\r\n\r\n" + answer("200 OK", {}, b"ok")))
    assert fetch(server.url()) == [(200, b"ok")]


def test_a_header_value_with_a_line_break_is_never_sent(raw):
    server = raw(each_request(lambda k: answer("200 OK", {}, b"ok")))

    async def go() -> None:
        http = DirectHttp(server.url())
        try:
            with pytest.raises(HttpError, match="header X-Injected holds a line break"):
                await http.send("POST", [("X-Injected", "a\r\nHost: evil")], b"{}")
        finally:
            await http.aclose()

    asyncio.run(go())
    assert server.requests == []


# -- closing, slow servers, deadlines --------------------------------------------------------------------------
def test_a_server_closing_without_answering_is_an_error(raw):
    def script(conn: socket.socket, n: int) -> None:
        server_of[0].read_request(conn)

    server = raw(script)
    with pytest.raises(HttpProtocolError, match="closed the connection before the response headers"):
        fetch(server.url())
    assert server.connections == 1  # a new connection that got nothing: not retried (the server saw it)


def test_a_slowloris_server_is_bounded_by_the_callers_deadline(raw):
    def script(conn: socket.socket, n: int) -> None:
        server_of[0].read_request(conn)
        for byte in b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"z" * 1000:
            conn.sendall(bytes([byte]))
            time.sleep(0.05)

    server = raw(script)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        fetch(server.url(), deadline=0.5)
    assert time.monotonic() - started < 10  # generous: the deadline is 0.5 s
    assert server.gone.wait(10)  # the abandoned connection was closed, not left open


def test_a_trickling_body_is_bounded_by_the_deadline_too(raw):
    def script(conn: socket.socket, n: int) -> None:
        server_of[0].read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(1000):
            conn.sendall(b"x")
            time.sleep(0.05)

    server = raw(script)
    with pytest.raises(TimeoutError):
        fetch(server.url(), deadline=0.5)
    assert server.gone.wait(10)


def test_a_refused_connection_is_an_http_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(HttpError, match=f"cannot connect to 127.0.0.1:{port}"):
            fetch(f"http://127.0.0.1:{port}/mcp")


# -- bodies: size bounds, compression, non-UTF-8 ---------------------------------------------------------------
def test_a_capped_read_stops_and_drops_the_connection(raw):
    big = b"y" * (4 * 1024 * 1024)
    server = raw(each_request(lambda k: answer("200 OK", {}, big)))
    assert fetch(server.url(), times=2, limit=1024) == [(200, None)] * 2
    assert server.connections == 2  # the unread rest is not left in front of the next answer


def test_gzip_and_deflate_bodies_are_inflated(raw):
    text = b'{"hello": "world"}' * 100
    bodies = [
        answer("200 OK", {"Content-Encoding": "gzip"}, gzip.compress(text)),
        answer("200 OK", {"Content-Encoding": "deflate"}, zlib.compress(text)),
        answer("200 OK", {"Content-Encoding": "deflate"}, zlib.compress(text, wbits=-15)),  # raw deflate, as some send
    ]
    server = raw(each_request(lambda k: bodies[k]))
    assert fetch(server.url(), times=3) == [(200, text)] * 3


def test_a_compression_bomb_is_cut_at_the_read_limit(raw):
    import tracemalloc

    bomb = gzip.compress(b"\0" * (200 * 1024 * 1024), compresslevel=9)  # ~200 KB that inflate to 200 MB
    server = raw(each_request(lambda k: answer("200 OK", {"Content-Encoding": "gzip"}, bomb)))
    tracemalloc.start()
    try:
        assert fetch(server.url(), limit=1024 * 1024) == [(200, None)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, peak


def test_corrupt_and_unknown_encodings_are_errors(raw):
    bodies = [
        answer("200 OK", {"Content-Encoding": "gzip"}, b"not gzip at all"),
        answer("200 OK", {"Content-Encoding": "br"}, b"..."),
        answer("200 OK", {"Content-Encoding": "gzip"}, gzip.compress(b"x" * 1000)[:-12]),
    ]
    server = raw(each_request(lambda k: bodies[k]))
    for error in ("gzip body is corrupt", "Content-Encoding 'br' is not supported", "ends before its compressed"):
        with pytest.raises(HttpProtocolError, match=error):
            fetch(server.url())


# -- TLS on the same path (the certificate fixture is in conftest.py) --------------------------------------
def test_tls_is_spoken_on_the_same_path_and_an_untrusted_certificate_refused(raw, certificate, monkeypatch):
    cert, key = certificate
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)

    def script(conn: socket.socket, n: int) -> None:
        try:
            tls = server_side.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError):
            return  # the client refused our certificate
        each_request(lambda k: answer("200 OK", {}, b"secure"))(tls, n)

    server = raw(script)
    url = f"https://127.0.0.1:{server.port}/mcp"
    with pytest.raises(HttpError, match=r"TLS handshake with 127\.0\.0\.1:\d+ failed"):
        fetch(url)  # certifi's roots do not know this certificate
    monkeypatch.setattr(h1, "_CONTEXT", ssl.create_default_context(cafile=str(cert)))
    assert fetch(url, times=2) == [(200, b"secure")] * 2


def test_url_credentials_go_as_basic_authorization_and_never_in_the_host_field(raw, monkeypatch):
    import base64

    from cireil.runtime.mcp.transport import Transport

    body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
    server = raw(each_request(lambda k: answer("200 OK", {"Content-Type": "application/json"}, body)))
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)

    async def go() -> None:
        transport = Transport(f"http://us%40er:p%3Ass@127.0.0.1:{server.port}/mcp?x=1", {})
        assert isinstance(transport._http, DirectHttp)  # no proxy settings: the direct path
        transport.adopt_modern({})
        try:
            await transport.request("tools/call", {"name": "t", "arguments": {}})
        finally:
            await transport.close()

    asyncio.run(go())
    head = server.requests[0].split(b"\r\n\r\n")[0].decode()
    assert head.startswith(f"POST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n")
    assert f"Authorization: Basic {base64.b64encode(b'us@er:p:ss').decode()}\r\n" in head


def test_json_answers_are_parsed_as_utf8_with_bad_bytes_replaced(raw):
    from cireil.runtime.mcp.transport import Transport

    def reply(k: int) -> bytes:
        body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"caf\xe9 \xff"}]}}'
        return answer("200 OK", {"Content-Type": "application/json"}, body)

    server = raw(each_request(reply))

    async def go() -> dict:
        transport = Transport(server.url(), {})
        transport.adopt_modern({})
        try:
            return await transport.request("tools/call", {"name": "t", "arguments": {}})
        finally:
            await transport.close()

    assert json.dumps(asyncio.run(go())["content"][0]["text"]) == '"caf\\ufffd \\ufffd"'


# -- as the agent sees it: through McpClient ---------------------------------------------------------------------
def modern_server(call_answer: Callable[[socket.socket, int], None]) -> Callable[[socket.socket, int], None]:
    """A modern MCP server whose discover and tools/list are well-formed; tools/call gets `call_answer`."""

    def script(conn: socket.socket, n: int) -> None:
        while (body := server_of[0].read_request(conn)) is not None:
            message = json.loads(body)
            if message["method"] == "tools/call":
                call_answer(conn, message["id"])
                continue
            if message["method"] == "server/discover":
                result: dict = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
            else:
                result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
            data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            conn.sendall(answer("200 OK", {"Content-Type": "application/json"}, data))

    return script


def call_through_client(url: str, timeout_ms: int = 10000) -> dict:
    from cireil.runtime.config.mcp_config import McpServer
    from cireil.runtime.mcp.client import McpClient

    async def go() -> dict:
        client = McpClient(McpServer("raw", url, timeout=timeout_ms))
        try:
            await client.connect()
            return await client.call_tool("t", {})
        finally:
            await client.close()

    return asyncio.run(go())


def test_a_lying_server_is_a_clear_call_error(raw):
    from cireil.runtime.mcp.errors import McpError

    def lie(conn: socket.socket, rid: int) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{}")
        conn.shutdown(socket.SHUT_WR)

    server = raw(modern_server(lie))
    message = f"bad HTTP answer from {server.url()}: the server closed the connection after 2 of the 500 body bytes"
    with pytest.raises(McpError, match=message.replace(".", r"\.")):
        call_through_client(server.url())


def test_a_slowloris_call_ends_at_the_servers_timeout(raw):
    from cireil.runtime.mcp.errors import McpTimeout

    def slow(conn: socket.socket, rid: int) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X: " + b"z" * 1000:
            conn.sendall(bytes([byte]))
            time.sleep(0.05)

    server = raw(modern_server(slow))
    with pytest.raises(McpTimeout, match="timed out after 1000 ms calling t"):
        call_through_client(server.url(), timeout_ms=1000)
    assert server.gone.wait(10)  # the connection under the call was closed, not left to trickle


def test_endless_interim_answers_are_bounded(raw):
    server = raw(each_request(lambda k: b"HTTP/1.1 102 Processing\r\n\r\n" * 50 + answer("200 OK", {}, b"ok")))
    with pytest.raises(HttpProtocolError, match="more than 8 interim"):
        fetch(server.url())


def test_concurrent_requests_each_get_their_own_answer_and_connections_are_pooled(raw):
    def script(conn: socket.socket, n: int) -> None:
        while (body := server.read_request(conn)) is not None:
            time.sleep(0.05)  # long enough that the requests overlap
            conn.sendall(answer("200 OK", {}, body))

    server = raw(script)

    async def go() -> list[bytes]:
        http = DirectHttp(server.url())

        async def one(k: int) -> bytes:
            response = await http.send("POST", FIELDS, f"request {k}".encode())
            try:
                return await response.read(1024) or b""
            finally:
                await response.aclose()

        try:
            first = await asyncio.gather(*(one(k) for k in range(5)))
            again = [await one(k) for k in range(5, 8)]
            return [*first, *again]
        finally:
            await http.aclose()

    assert asyncio.run(go()) == [f"request {k}".encode() for k in range(8)]
    assert server.connections == 5  # the later requests reused pooled connections


def test_cookies_a_server_sets_go_back_to_it_and_are_bounded():
    from cireil.runtime.mcp.cookies import MAX_KEPT, Jar

    jar = Jar("http://127.0.0.1:8000/mcp")
    assert not jar and jar.header() is None
    jar.take(["lb=replica-2; Path=/"])
    assert jar.header() == "lb=replica-2"
    for k in range(200):  # a server minting a new cookie on every answer
        jar.take([f"c{k}=v; Path=/"])
    assert len(jar.header().split("; ")) == MAX_KEPT
