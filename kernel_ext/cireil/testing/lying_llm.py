"""A model server on loopback that lies, for hostile-input tests and bench/hostile_provider.py.

    from cireil.testing.lying_llm import LyingLLM, answers

    with LyingLLM(answers.gzip_bomb(300)) as liar:   # 127.0.0.1, a free port
        ...  # point engine.toml's apiBase (or a ProviderConfig) at liar.base_url
        liar.answer = answers.endless_stream()         # what the next request gets

Every POST gets `answer(handler)`, a function writing the raw HTTP reply (status line, headers, body) to
`handler.wfile`; the canned answers below are what a broken or hostile provider sends: a gzip bomb, a line
that never ends, a stream that never ends, a silent stream, a huge error body, events of any shape. A GET
(the model list) gets `models_answer`, a 404 unless set. Standard library only; the connection closes
after every reply, so a body runs until the server hangs up.
"""

from __future__ import annotations

import contextlib
import json
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import LoopbackServer, TrackedHandler

__all__ = ["LyingLLM", "answers"]

Answer = Callable[[BaseHTTPRequestHandler], None]
CHUNK = 64 * 1024


class LyingLLM(LoopbackServer):
    thread_name = "lying-llm"

    def __init__(self, answer: Answer | None = None, *, models_answer: Answer | None = None) -> None:
        super().__init__()
        self.answer: Answer = answer or answers.events()
        self.models_answer = models_answer
        self.requests = 0

    def handler_class(self) -> type[TrackedHandler]:
        liar = self

        class Handler(_Handler):
            owner = liar

        return Handler

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


class _Handler(TrackedHandler):
    owner: LyingLLM

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        with self.owner._lock:
            self.owner.requests += 1
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client hung up: what a limit is for
            self.owner.answer(self)

    def do_GET(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            (self.owner.models_answer or answers.status(404, b'{"error": "no model list"}'))(self)


def _head(h: BaseHTTPRequestHandler, status: int, headers: dict[str, str]) -> None:
    lines = [f"HTTP/1.1 {status} Lying\r\n", "Connection: close\r\n"]
    lines += [f"{name}: {value}\r\n" for name, value in headers.items()]
    h.wfile.write(("".join(lines) + "\r\n").encode("latin-1"))


def _body(h: BaseHTTPRequestHandler, pieces: Iterable[bytes]) -> None:
    for piece in pieces:
        if h.owner.stopping.is_set():  # type: ignore[attr-defined]
            return
        h.wfile.write(piece)
    h.wfile.flush()


def _repeat(unit: bytes, total: int) -> Iterator[bytes]:
    block = unit * max(1, CHUNK // len(unit))
    sent = 0
    while sent < total:
        piece = block[: total - sent]
        sent += len(piece)
        yield piece


@cache
def gzipped(prefix: bytes, filler: bytes, mb: int) -> bytes:
    """`prefix` then `filler` repeated to `mb` MB, gzip-compressed (about 1 KB per MB): made once per run."""
    z = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    out = [z.compress(prefix)]
    block = filler * (2**20 // len(filler))
    out += [z.compress(block) for _ in range(mb)]
    out.append(z.flush())
    return b"".join(out)


def chunk(delta: dict, finish: str | None = None, **extra: Any) -> dict:
    """One chat-completions stream chunk."""
    return {
        "id": "lie",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


_CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "respond", "arguments": ""}}
RESPOND = [  # a respond call, streamed as OpenAI does
    chunk({"role": "assistant", "tool_calls": [_CALL]}),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"content": "fine"}'}}]}),
    chunk({}, "tool_calls"),
]


class answers:
    """Canned lies (each returns an Answer)."""

    @staticmethod
    def status(status: int, body: bytes, content_type: str = "application/json") -> Answer:
        def answer(h: BaseHTTPRequestHandler) -> None:
            _head(h, status, {"Content-Type": content_type, "Content-Length": str(len(body))})
            _body(h, [body])

        return answer

    @staticmethod
    def json_body(payload: Any, status: int = 200) -> Answer:
        return answers.status(status, json.dumps(payload).encode())

    @staticmethod
    def events(*payloads: Any, done: bool = True, raw: bytes = b"") -> Answer:
        """A stream of `data:` events (each payload JSON-encoded unless it is bytes), then `[DONE]`; by default
        a respond call with usage."""
        if not payloads:
            payloads = (
                *RESPOND,
                {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}},
            )

        def answer(h: BaseHTTPRequestHandler) -> None:
            _head(h, 200, {"Content-Type": "text/event-stream"})
            pieces = [p if isinstance(p, bytes) else json.dumps(p).encode() for p in payloads]
            body = b"".join(b"data: " + p + b"\n\n" for p in pieces) + raw
            _body(h, [body + (b"data: [DONE]\n\n" if done else b"")])

        return answer

    @staticmethod
    def gzip_bomb(mb: int = 300, *, stream: bool = False) -> Answer:
        """A reply of about mb KB on the wire that gzip-decodes to `mb` MB (spaces after a JSON opening, or one
        SSE line of `a`s)."""
        prefix, filler = (b"data: ", b"a") if stream else (b'{"choices": [{"message": {"content": "', b" ")
        body = gzipped(prefix, filler, mb)
        kind = "text/event-stream" if stream else "application/json"

        def answer(h: BaseHTTPRequestHandler) -> None:
            headers = {"Content-Type": kind, "Content-Encoding": "gzip", "Content-Length": str(len(body))}
            _head(h, 200, headers)
            _body(h, [body[i : i + CHUNK] for i in range(0, len(body), CHUNK)])

        return answer

    @staticmethod
    def endless_line(mb: int = 48) -> Answer:
        """An event stream whose first line is `mb` MB long and never ends (the server then hangs up)."""

        def answer(h: BaseHTTPRequestHandler) -> None:
            _head(h, 200, {"Content-Type": "text/event-stream"})
            _body(h, [b"data: ", *_repeat(b"a", mb * 2**20)])

        return answer

    @staticmethod
    def endless_stream(interval: float = 0.005) -> Answer:
        """Text deltas, well formed, forever (until the client leaves or the server stops)."""
        event = b"data: " + json.dumps(chunk({"content": "and so on "})).encode() + b"\n\n"

        def answer(h: BaseHTTPRequestHandler) -> None:
            _head(h, 200, {"Content-Type": "text/event-stream"})
            while not h.owner.stopping.is_set():  # type: ignore[attr-defined]
                h.wfile.write(event * 8)
                h.wfile.flush()
                time.sleep(interval)

        return answer

    @staticmethod
    def silent(*, stream: bool = True) -> Answer:
        """Headers, then nothing: a provider that hung."""

        def answer(h: BaseHTTPRequestHandler) -> None:
            _head(h, 200, {"Content-Type": "text/event-stream" if stream else "application/json"})
            h.wfile.flush()
            h.owner.stopping.wait()  # type: ignore[attr-defined]

        return answer

    @staticmethod
    def huge_error(mb: int = 60, status: int = 500) -> Answer:
        """An error whose message is `mb` MB long, as {"error": {"message": ...}}."""
        head, tail = b'{"error": {"message": "', b'"}}'

        def answer(h: BaseHTTPRequestHandler) -> None:
            total = len(head) + mb * 2**20 + len(tail)
            _head(h, status, {"Content-Type": "application/json", "Content-Length": str(total)})
            _body(h, [head, *_repeat(b"A", mb * 2**20), tail])

        return answer
