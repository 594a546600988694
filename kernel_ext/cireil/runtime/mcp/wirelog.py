"""The wire log: the recent HTTP exchanges with one MCP server, for a person debugging it.

Each exchange is one HTTP request and its answer: the JSON-RPC message sent, the status and headers
that came back, the JSON body or every SSE event, the negotiated revision and three timings (TCP
connect, when one was made; first byte, i.e. response headers; total). The log is a ring of the
latest `capacity` exchanges; capacity 0 turns it off.

Recording is made cheap for the call path: it keeps references (the body bytes, the header objects
the transport already built, the text it already decoded) and a few timestamps. Everything costly,
masking secrets, decoding JSON, formatting, happens only when someone looks (`as_dict`).
"""

from __future__ import annotations

import contextvars
import json
import time
from collections import deque
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from ..base.secrets import mask, mask_data, mask_url, masked_headers

DEFAULT_CAPACITY = 64
BODY_LIMIT = 64 * 1024  # characters kept of one message; a huge tools/list is cut, not stored whole
MESSAGE_LIMIT = 200  # SSE events kept of one response

# Set by a caller that wants the exchanges of its own call (the tool run, for the result's wire fold).
CAPTURE: contextvars.ContextVar[list[Exchange] | None] = contextvars.ContextVar("cireil_mcp_capture", default=None)


class Exchange:
    """One HTTP request to the server and what came back. Mutated only while the request runs."""

    __slots__ = (
        "_first",
        "_t0",
        "_tcp",
        "at",
        "body",
        "connect_ms",
        "error",
        "first_byte_ms",
        "http_method",
        "kind",
        "messages",
        "method",
        "request_headers",
        "response_headers",
        "revision",
        "secret",
        "seq",
        "server",
        "status",
        "total_ms",
        "truncated",
        "url",
    )

    def __init__(self, log: WireLog, seq: int, method: str, http_method: str, body: bytes, headers: Any) -> None:
        # what showing it needs of the log, not the log itself: a result holding its exchanges must not keep
        # the whole ring alive
        self.server, self.url, self.secret = log.server, log.url, log.secret
        self.seq = seq
        self.method = method
        self.http_method = http_method
        self.body = body if len(body) <= BODY_LIMIT else body[:BODY_LIMIT]
        self.truncated = len(body) > BODY_LIMIT
        self.request_headers = headers
        self.at = time.time()
        self._t0 = time.perf_counter()
        self._tcp = 0.0
        self.connect_ms: float | None = None
        self.first_byte_ms: float | None = None
        self.total_ms: float | None = None
        self.status: int | None = None
        self.response_headers: Any = None
        self.kind = ""
        self.messages: list[str] = []
        self._first = True
        self.error: str | None = None
        self.revision: str | None = None

    # -- recording (the transport calls these) ----------------------------------------------------------
    async def trace(self, name: str, info: dict) -> None:
        """httpcore's trace hook: only the TCP connect is timed (none when a pooled connection is reused)."""
        if name == "connection.connect_tcp.started":
            self._tcp = time.perf_counter()
        elif name == "connection.connect_tcp.complete":
            self.connect_ms = (time.perf_counter() - self._tcp) * 1000

    def connected(self, ms: float) -> None:
        """The TCP connect time, from the direct HTTP path (h1.py) when it opens a connection."""
        self.connect_ms = ms

    def answered(self, status: int, headers: Any) -> None:
        self.first_byte_ms = (time.perf_counter() - self._t0) * 1000
        self.status = status
        self.response_headers = headers

    def message(self, text: str, kind: str) -> None:
        """A JSON body or one SSE event's data (kind "json", "sse" or "text" for an error body)."""
        self.kind = kind
        if len(self.messages) < MESSAGE_LIMIT:
            if len(text) > BODY_LIMIT:
                text, self.truncated = text[:BODY_LIMIT], True
            self.messages.append(text)
        else:
            self.truncated = True

    def end(self, revision: str | None, error: BaseException | None = None) -> None:
        self.total_ms = (time.perf_counter() - self._t0) * 1000
        self.revision = revision
        if error is not None:
            self.error = str(error) or type(error).__name__

    # -- looking ----------------------------------------------------------------------------------------
    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data with Authorization, cookies and the configured headers masked, and every known
        secret (base/secrets.py) wherever else it appears."""
        request: dict[str, Any] = {"headers": masked_headers(self.request_headers, self.secret)}
        request["body"] = mask_data(_decoded(self.body.decode("utf-8", "replace")))
        out: dict[str, Any] = {
            "seq": self.seq,
            "server": self.server,
            "at": datetime.fromtimestamp(self.at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "method": self.method,
            "http": self.http_method,
            "url": mask_url(self.url),
            "revision": self.revision,
            "request": request,
        }
        if self.status is not None:
            out["response"] = {
                "status": self.status,
                "headers": masked_headers(self.response_headers, self.secret),
                "type": self.kind or None,
                "messages": [mask_data(_decoded(m)) for m in self.messages],
            }
        out["timings_ms"] = {
            "connect": _ms(self.connect_ms),
            "first_byte": _ms(self.first_byte_ms),
            "total": _ms(self.total_ms),
        }
        if self.truncated:
            out["truncated"] = True
        if self.error is not None:
            out["error"] = mask(self.error.replace(self.url, out["url"]))
        return out


class WireLog:
    """The latest exchanges with one server, oldest first."""

    def __init__(self, server: str, url: str, secret: Iterable[str] = (), capacity: int = DEFAULT_CAPACITY) -> None:
        self.server = server
        self.url = url
        self.secret = frozenset(h.lower() for h in secret)  # the configured headers: masked like Authorization
        self._ring: deque[Exchange] = deque(maxlen=max(0, capacity))
        self._seq = 0

    @property
    def capacity(self) -> int:
        return self._ring.maxlen or 0

    @capacity.setter
    def capacity(self, value: int) -> None:
        """Resize (0 turns the log off); the newest exchanges are kept."""
        self._ring = deque(self._ring, maxlen=max(0, int(value)))

    def begin(self, method: str, body: bytes, headers: Any, http_method: str = "POST") -> Exchange | None:
        if not self._ring.maxlen:
            return None
        self._seq += 1
        exchange = Exchange(self, self._seq, method, http_method, body, headers)
        self._ring.append(exchange)
        captured = CAPTURE.get()
        if captured is not None:
            captured.append(exchange)
        return exchange

    def __iter__(self) -> Iterator[Exchange]:
        return iter(list(self._ring))

    def __len__(self) -> int:
        return len(self._ring)

    def clear(self) -> None:
        self._ring.clear()

    def entries(self, limit: int | None = None) -> list[dict[str, Any]]:
        items = list(self._ring)
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return [e.as_dict() for e in items]


def write_jsonl(entries: Iterable[dict[str, Any]], path: str) -> int:
    """Write exchanges as JSON lines (one exchange a line); returns how many. Written whole or not at all."""
    from pathlib import Path

    from ..files.atomic import atomic_write

    lines = [json.dumps(e, ensure_ascii=False) + "\n" for e in entries]
    atomic_write(Path(path), "".join(lines).encode())
    return len(lines)


def _decoded(text: str) -> Any:
    from ..base.jsonbound import loads as bounded_loads  # a depth bomb is shown as the text it is

    try:
        return bounded_loads(text)
    except ValueError:
        return text  # not JSON (an error page, a cut message): shown as the text it is


def _ms(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None
