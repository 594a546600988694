"""The asyncio network backend under httpx: plain HTTP, TLS, connection reuse, a server that closes idle
connections, timeouts and refused connections, each on real sockets on loopback."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from cireil.runtime.engine.netbackend import fast_transport, uses_asyncio_backend


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    connections: ClassVar[set[tuple]] = set()
    close_after = False  # close each connection after its answer, without saying so (no Connection: close)
    delay = 0.0

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        type(self).connections.add(self.client_address)
        time.sleep(type(self).delay)
        body = b"hello " + self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if type(self).close_after:
            self.close_connection = True


@pytest.fixture
def handler():
    class Fresh(_Handler):
        connections: ClassVar[set[tuple]] = set()

    return Fresh


def serve(handler, context: ssl.SSLContext | None = None):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run(coro):
    return asyncio.run(coro)


def test_the_transport_runs_on_the_asyncio_backend():
    # if httpx ever builds its pool differently this fails, rather than silently losing the speed
    assert uses_asyncio_backend(fast_transport())


def test_requests_reuse_one_connection(handler):
    server = serve(handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"

    async def go():
        async with httpx.AsyncClient(transport=fast_transport()) as client:
            return [(await client.get(f"{base}/{n}")).text for n in range(5)]

    try:
        assert run(go()) == [f"hello /{n}" for n in range(5)]
        assert len(handler.connections) == 1
    finally:
        server.shutdown()


def test_a_connection_the_server_closed_while_idle_is_not_reused(handler):
    # the pool asks the stream whether an idle connection became readable (closed) before reusing it
    handler.close_after = True
    server = serve(handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"

    async def go():
        async with httpx.AsyncClient(transport=fast_transport()) as client:
            out = []
            for n in range(3):
                out.append((await client.get(f"{base}/{n}")).text)
                await asyncio.sleep(0.05)  # the close arrives while the connection sits in the pool
            return out

    try:
        assert run(go()) == ["hello /0", "hello /1", "hello /2"]
        assert len(handler.connections) == 3
    finally:
        server.shutdown()


def test_a_read_timeout_is_httpx_read_timeout(handler):
    handler.delay = 1.0
    server = serve(handler)

    async def go():
        async with httpx.AsyncClient(transport=fast_transport(), timeout=0.2) as client:
            await client.get(f"http://127.0.0.1:{server.server_address[1]}/slow")

    try:
        with pytest.raises(httpx.ReadTimeout):
            run(go())
    finally:
        server.shutdown()


def test_a_refused_connection_is_httpx_connect_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once it is closed

    async def go():
        async with httpx.AsyncClient(transport=fast_transport()) as client:
            await client.get(f"http://127.0.0.1:{port}/")

    with pytest.raises(httpx.ConnectError):
        run(go())


def test_tls_with_a_trusted_certificate_and_refusal_of_an_untrusted_one(handler, certificate):
    cert, key = certificate
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    server = serve(handler, server_side)
    url = f"https://127.0.0.1:{server.server_address[1]}/secure"
    trusted = ssl.create_default_context(cafile=str(cert))

    async def get(verify):
        async with httpx.AsyncClient(transport=fast_transport(verify=verify)) as client:
            response = await client.get(url)
            return response.text, response.extensions["network_stream"].get_extra_info("ssl_object") is not None

    try:
        assert run(get(trusted)) == ("hello /secure", True)
        with pytest.raises(httpx.ConnectError):
            run(get(True))  # the system's trust store does not know this certificate
    finally:
        server.shutdown()
