"""A stand-in HTTP server on 127.0.0.1 that stops cleanly: the lifecycle ScriptedLLM and LyingLLM share.

`stop()` must not wait on a reply that never ends or on an idle keep-alive connection: it sets `stopping`
(replies that wait or stream check it) and shuts down every open connection before joining the thread.
Standard library only, like everything in cireil.testing.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class LoopbackServer:
    """Subclasses say which handler answers (`handler_class`); the handler reaches the server as `owner`."""

    thread_name = "loopback-server"

    def __init__(self, *, port: int = 0) -> None:
        self._port = port
        self._lock = threading.Lock()
        self.stopping = threading.Event()  # set by stop(): ends replies that wait or stream
        self._connections: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler_class(self) -> type[TrackedHandler]:
        raise NotImplementedError

    def start(self) -> Self:
        if self._server is not None:
            return self
        self.stopping.clear()
        server = ThreadingHTTPServer(("127.0.0.1", self._port), self.handler_class())
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self.stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            open_connections = list(self._connections)
        for conn in open_connections:
            # idle keep-alive connections (and replies cut short) would otherwise hold their threads
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running; call start() first")
        return self._server.server_address[1]


class TrackedHandler(BaseHTTPRequestHandler):
    """Keeps its connection known to the server (so stop() can end it) and writes no access log."""

    protocol_version = "HTTP/1.1"
    owner: Any  # the LoopbackServer subclass that made the handler

    def setup(self) -> None:
        super().setup()
        with self.owner._lock:
            self.owner._connections.add(self.connection)

    def finish(self) -> None:
        with self.owner._lock:
            self.owner._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a test run or a notebook should not fill with access logs
