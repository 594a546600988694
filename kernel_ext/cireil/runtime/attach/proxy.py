"""`cireil proxy AGENT_DIR`: the recording pass-through between the original and its model provider.

Each request to `/p/<provider>/<rest>` goes to `<that provider's apiBase before attaching>/<rest>` as it came:
method, headers (keys included: they are passed on, never stored), body bytes. Only the Host header and the
message framing (a request body read whole is sent with its Content-Length) are the proxy's own; hop-by-hop
headers (Connection, Keep-Alive, Transfer-Encoding, TE, Upgrade, Proxy-*) are not forwarded, as for any proxy.
The reply goes back piece by piece as it arrives (a stream token for token), its status and headers unchanged
but for the framing. Once the reply is out the exchange is queued for the recorder, a process of its own
(recording.py, running capture.py's `Capture`), so recording never takes the CPU or the GIL from a forward: a
recording that fails or falls behind never delays or fails a forward. Bound to 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import ssl
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..files.atomic import atomic_write
from .capture import Capture, Exchange
from .recording import RecordingProcess
from .state import PROXY_FILE, Upstream, provider_of_path, upstreams_for
from .wire import endpoint_kind

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer",
     "trailers", "transfer-encoding", "upgrade"}
)  # fmt: skip
RECORD_LIMIT = 64 * 1024 * 1024  # bytes of one reply kept for the recording (the forward itself has no limit)
TIMEOUT = 660.0  # seconds a provider may take: above the original's own 10 minute request timeout
READ = 65536


class _Pool:
    """Idle keep-alive connections per upstream host: a request reuses one instead of connecting again."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._tls = ssl.create_default_context()

    def get(self, scheme: str, host: str, port: int) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            idle = self._idle.get((scheme, host, port))
            if idle:
                return idle.pop(), True
        if scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=TIMEOUT, context=self._tls), False
        conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
        return conn, False

    def put(self, scheme: str, host: str, port: int, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.setdefault((scheme, host, port), []).append(conn)

    def close(self) -> None:
        with self._lock:
            for conns in self._idle.values():
                for conn in conns:
                    conn.close()
            self._idle.clear()


def _nodelay(conn: http.client.HTTPConnection) -> None:
    if conn.sock is not None:
        with contextlib.suppress(OSError):
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def decoded(data: bytes, encoding: str) -> bytes | None:
    """The reply body without its content-encoding (None: an encoding the recorder cannot read)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return data
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompress(data, 16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        try:
            return zlib.decompress(data)
        except zlib.error:
            return zlib.decompress(data, -zlib.MAX_WBITS)
    if encoding == "br":
        try:
            import brotli  # type: ignore[import-not-found]
        except ImportError:
            return None
        return brotli.decompress(data)
    return None


class ProxyServer:
    """The proxy of one agent: `start()` listens on 127.0.0.1:`port` (0: a free one), `stop()` ends it."""

    def __init__(
        self,
        agent_dir: Path,
        *,
        port: int = 0,
        upstreams: dict[str, Upstream] | None = None,
        capture: Capture | RecordingProcess | None = None,
        log: Any = None,
        recording: str = "process",
    ) -> None:
        """`capture`: the recorder to use (default: `recording="process"`, a recorder process of its own;
        `"thread"`: `Capture` on a thread of this process, as the benchmark compares)."""
        self.agent_dir = Path(agent_dir).resolve()
        self.upstreams = upstreams if upstreams is not None else upstreams_for(self.agent_dir)
        self.log = log or sys.stderr
        if capture is None:
            capture = (RecordingProcess if recording == "process" else Capture)(self.agent_dir, log=self.log)
        self.capture = capture
        self.pool = _Pool()
        self.forwarded = 0
        self.inflight = 0  # requests being forwarded: stop() lets them finish
        self._count = threading.Lock()
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def start(self) -> ProxyServer:
        self.capture.start()
        server = ThreadingHTTPServer(("127.0.0.1", self._port), _handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()  # no new request is taken; the ones in flight finish (a stream to its end)
            deadline = time.monotonic() + TIMEOUT
            while self.inflight and time.monotonic() < deadline:
                time.sleep(0.01)
            server.server_close()
        self.pool.close()
        self.capture.stop()

    def drain(self, timeout: float = 10.0) -> bool:
        """Wait until the requests in flight were forwarded and handed over, then until they were recorded (a
        client has its reply before the proxy hands the exchange to the recorder)."""
        deadline = time.monotonic() + timeout
        while self.inflight and time.monotonic() < deadline:
            time.sleep(0.005)
        return not self.inflight and self.capture.drain(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> ProxyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler(proxy: ProxyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Forward):
        owner = proxy

    return Handler


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive to the original, as the provider gives it
    owner: ProxyServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return  # one line per request would fill the log; failures are said where they happen

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def do_PUT(self) -> None:
        self._forward()

    def do_DELETE(self) -> None:
        self._forward()

    def do_PATCH(self) -> None:
        self._forward()

    def do_HEAD(self) -> None:
        self._forward()

    def _fail(self, status: int, message: str) -> None:
        data = json.dumps({"error": {"message": f"cireil proxy: {message}", "type": "cireil_proxy"}}).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self) -> None:
        with self.owner._count:
            self.owner.inflight += 1
        try:
            self._forward_one()
        finally:
            with self.owner._count:
                self.owner.inflight -= 1

    def _forward_one(self) -> None:
        started_wall, started = time.time(), time.perf_counter()
        if self.path.rstrip("/") == "/cireil/status":
            self._status()
            return
        found = provider_of_path(self.path)
        upstream = self.owner.upstreams.get(found[0]) if found else None
        body = self._body()
        if found is None or upstream is None:
            self._fail(
                404, f"no provider for {self.path}; the proxy serves /p/<provider>/... for engine.toml's providers"
            )
            return
        base = urlsplit(upstream.api_base)
        target = base.path.rstrip("/") + found[1]
        scheme, host = base.scheme, base.hostname or ""
        port = base.port or (443 if scheme == "https" else 80)
        lines = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"]
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            lines = [(k, v) for k, v in lines if k.lower() != "content-length"] + [("Content-Length", str(len(body)))]
        netloc = base.netloc.rsplit("@", 1)[-1]
        try:
            response, conn = self._send(scheme, host, port, target, netloc, lines, body)
        except (OSError, http.client.HTTPException) as exc:
            self._fail(502, f"cannot reach {scheme}://{netloc} for provider {upstream.provider!r}: {exc}")
            self._submit(upstream, target, body, 502, "", b"", started_wall, None, started, str(exc))
            return
        self._relay(upstream, target, body, response, conn, (scheme, host, port), started_wall, started)

    def _send(
        self, scheme: str, host: str, port: int, target: str, netloc: str, lines: list, body: bytes
    ) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
        """The request on a pooled connection; a pooled one the provider closed meanwhile is replaced once."""
        for attempt in (0, 1):
            conn, reused = self.owner.pool.get(scheme, host, port)
            try:
                conn.putrequest(self.command, target, skip_host=True, skip_accept_encoding=True)
                conn.putheader("Host", netloc)
                for name, value in lines:
                    conn.putheader(name, value)
                conn.endheaders(body if body or self.command not in ("GET", "HEAD") else None)
                _nodelay(conn)
                return conn.getresponse(), conn
            except (
                http.client.RemoteDisconnected,
                http.client.ImproperConnectionState,
                BrokenPipeError,
                ConnectionResetError,
            ):
                conn.close()
                if not reused or attempt:
                    raise
            except BaseException:
                conn.close()
                raise
        raise AssertionError("unreachable")

    def _relay(
        self,
        upstream: Upstream,
        target: str,
        body: bytes,
        response: http.client.HTTPResponse,
        conn: http.client.HTTPConnection,
        key: tuple[str, str, int],
        started_wall: float,
        started: float,
    ) -> None:
        headers = response.getheaders()
        length = response.getheader("Content-Length")
        no_body = self.command == "HEAD" or response.status in (204, 304) or 100 <= response.status < 200
        chunked = length is None and not no_body
        self.send_response_only(response.status, response.reason)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        kept: list[bytes] = []
        size, ttft, failure = 0, None, None
        try:
            while not no_body:
                piece = response.read1(READ)
                if not piece:
                    break
                if ttft is None:
                    ttft = time.perf_counter() - started
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                else:
                    self.wfile.write(piece)
                self.wfile.flush()
                if size + len(piece) <= RECORD_LIMIT:
                    kept.append(piece)
                size += len(piece)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            response.read()  # b"": marks the response done, so its connection can carry the next request
        except (OSError, http.client.HTTPException) as exc:  # the original went away, or the provider did
            failure = f"the reply was cut short: {exc}"
            self.close_connection = True
        if failure is None and not response.will_close:
            self.owner.pool.put(*key, conn)
        else:
            conn.close()
        self.owner.forwarded += 1
        data = b"".join(kept)
        if size > RECORD_LIMIT:
            failure = failure or f"the reply ({size:,} bytes) is over the {RECORD_LIMIT:,} the recorder keeps"
        try:
            plain = decoded(data, response.getheader("Content-Encoding") or "")
        except (zlib.error, OSError, ValueError) as exc:
            plain, failure = b"", failure or f"the reply could not be decoded: {exc}"
        if plain is None:
            plain = b""
            failure = failure or f"content-encoding {response.getheader('Content-Encoding')!r} is not readable here"
        content_type = response.getheader("Content-Type") or ""
        self._submit(upstream, target, body, response.status, content_type, plain, started_wall, ttft, started, failure)

    def _submit(
        self,
        upstream: Upstream,
        target: str,
        body: bytes,
        status: int,
        content_type: str,
        reply: bytes,
        started_wall: float,
        ttft: float | None,
        started: float,
        failure: str | None,
    ) -> None:
        # the forward is done: the recording's trouble is never the original's
        with contextlib.suppress(Exception):
            self.owner.capture.submit(
                Exchange(
                    upstream.provider,
                    endpoint_kind(target) if self.command == "POST" else None,
                    self.command,
                    target,
                    {k.lower(): v for k, v in self.headers.items() if k.lower() == "session_id"},
                    body,
                    status,
                    content_type,
                    reply,
                    started_wall,
                    ttft,
                    time.perf_counter() - started,
                    failure,
                )
            )

    def _status(self) -> None:
        capture = self.owner.capture
        data = json.dumps(
            {
                "agent": str(self.owner.agent_dir),
                "forwarded": self.owner.forwarded,
                "recorded": capture.recorded,
                "dropped": capture.dropped,
                "failures": capture.failures,
                "problem": capture.problem,
                "providers": sorted(self.owner.upstreams),
            }
        ).encode()
        self.send_response_only(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(agent_dir: Path, port: int = 0, out: Any = None) -> int:
    """Run the proxy in this process until SIGTERM or SIGINT (Ctrl-C); its record file says where it listens."""
    out = out or sys.stdout
    agent_dir = Path(agent_dir).resolve()
    proxy = ProxyServer(agent_dir, port=port).start()
    record = agent_dir / PROXY_FILE
    info = {"pid": os.getpid(), "port": proxy.port, "started": time.time()}
    atomic_write(record, (json.dumps(info) + "\n").encode(), mode=0o600, keep_mode=False)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        names = ", ".join(f"{n} -> {u.api_base}" for n, u in proxy.upstreams.items())
        print(f"cireil proxy: listening on http://127.0.0.1:{proxy.port} for {agent_dir} ({names})", file=out)
        print(f"cireil proxy: recording into {agent_dir / 'cireil-recordings.db'}; Ctrl-C stops", file=out, flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        proxy.stop()  # the record goes last: `cireil detach` waits for it, so for the requests in flight
        with contextlib.suppress(OSError, ValueError):
            if json.loads(record.read_text()).get("pid") == os.getpid():
                record.unlink()
        print(f"cireil proxy: stopped ({proxy.forwarded} forwarded, {proxy.capture.recorded} recorded)", file=out)
    return 0
