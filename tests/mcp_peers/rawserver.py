"""A loopback TCP server that answers HTTP requests with whatever bytes a test scripts, lies included.

Each accepted connection runs `script(conn, n)` in its own thread (`n`: the connection's number from 0);
`read_request(conn)` reads one request off it. `connections` counts accepted connections; `gone` is set
when a script's write failed because the client had closed the connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

Script = Callable[[socket.socket, int], None]


class RawServer:
    def __init__(self, script: Script) -> None:
        self._script = script
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.connections = 0
        self.requests: list[bytes] = []
        self.gone = threading.Event()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            n, self.connections = self.connections, self.connections + 1
            self._open.append(conn)
            threading.Thread(target=self._run, args=(conn, n), daemon=True).start()

    def _run(self, conn: socket.socket, n: int) -> None:
        try:
            self._script(conn, n)
        except OSError:
            self.gone.set()
        finally:
            conn.close()

    def read_request(self, conn: socket.socket) -> bytes | None:
        """One request (head and Content-Length body), or None when the client closed the connection."""
        data = b""
        while b"\r\n\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                return None
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            more = conn.recv(65536)
            if not more:
                return None
            body += more
        self.requests.append(head + b"\r\n\r\n" + body)
        return body

    def close(self) -> None:
        self._sock.close()
        for conn in self._open:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()


def answer(status: str, headers: dict[str, str], body: bytes) -> bytes:
    """A well-formed answer with a Content-Length."""
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers.items()), f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
