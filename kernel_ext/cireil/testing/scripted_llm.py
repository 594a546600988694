"""A scripted OpenAI-compatible chat-completions server on loopback, for tests and offline tutorials.

    from cireil.testing.scripted_llm import ScriptedLLM, reply

    with ScriptedLLM() as llm:                      # 127.0.0.1, a free port
        llm.script(
            reply.tool_calls(("read", {"path": "/workspace/notes.md"}), reasoning="Look first."),
            reply.tool_calls(("respond", {"content": "Done."})),
        )
        ...  # point engine.toml's apiBase at llm.base_url
        llm.requests[0].body["messages"]            # what the client sent

Replies are served in order; once the script is used up, `default` answers (a reply, or a function
`fn(request_body) -> reply` for a tiny rule-based "model"). A request asking for `stream: true`
gets Server-Sent Events chunked the way OpenAI does; otherwise one JSON body. Standard library only:
the tutorial notebook runs it without network or extra packages.

The same script also answers `POST .../messages` in Anthropic's Messages API format (kind = "anthropic"):
content blocks, `tool_use`, thinking blocks with a signature, and its named stream events; and
`POST .../codex/responses` as ChatGPT's Codex backend streams the Responses API (kind = "openai-codex"),
with `POST /oauth/token` refreshing the logins it issued (`llm.codex`, scripted_codex.py).
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .loopback import LoopbackServer, TrackedHandler

__all__ = ["Recorded", "Reply", "ScriptedLLM", "reply"]


@dataclass
class Reply:
    """One scripted answer. Build it with the `reply` helpers rather than by hand."""

    calls: list[tuple[str, Any, str | None]] = field(default_factory=list)  # (name, args dict or raw text, id)
    text: str | None = None
    reasoning: str | None = None
    finish_reason: str = "stop"
    status: int = 200
    error: str | None = None
    delay: float = 0.0  # seconds; while streaming, the pause comes after the first pieces were sent
    json_only: bool = False  # answer with plain JSON even when the request asked to stream
    stream_error: str | None = None  # the stream starts, then reports this error instead of a reply


class reply:
    """Helpers building `Reply` objects."""

    @staticmethod
    def tool_calls(
        *calls: tuple,
        reasoning: str | None = None,
        text: str | None = None,
        delay: float = 0.0,
        json_only: bool = False,
    ) -> Reply:
        """Each call is (name, arguments) or (name, arguments, id); arguments may be a dict or raw text
        (to send invalid JSON); an id of None sends the call without one."""
        numbered = []
        for n, call in enumerate(calls):
            name, args, *rest = call
            numbered.append((name, args, rest[0] if rest else f"call_scripted_{n}"))
        return Reply(numbered, text, reasoning, "tool_calls", delay=delay, json_only=json_only)

    @staticmethod
    def text(text: str, *, reasoning: str | None = None, delay: float = 0.0, json_only: bool = False) -> Reply:
        """Free text and no tool call (finish_reason stop): what a model does when it forgets the tools."""
        return Reply([], text, reasoning, "stop", delay=delay, json_only=json_only)

    @staticmethod
    def error(status: int, message: str, *, delay: float = 0.0) -> Reply:
        """An HTTP error with an OpenAI-style body {"error": {"message": ...}}."""
        return Reply(status=status, error=message, delay=delay)

    @staticmethod
    def stream_error(message: str) -> Reply:
        """HTTP 200 and a stream that reports an error mid-way (each protocol's error event)."""
        return Reply(stream_error=message)

    @staticmethod
    def content_filter(text: str = "", *, delay: float = 0.0, json_only: bool = False) -> Reply:
        """The provider's filter cut the reply (finish_reason content_filter)."""
        return Reply([], text or None, None, "content_filter", delay=delay, json_only=json_only)


DEFAULT_REPLY = reply.tool_calls(("respond", {"content": "(script exhausted)"}))


@dataclass
class Recorded:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]  # names in lower case
    body: dict
    disconnected: bool = False  # the client went away before the reply was complete
    header_lines: list[tuple[str, str]] = field(default_factory=list)  # every line, repeats too, in order


class ScriptedLLM(LoopbackServer):
    thread_name = "scripted-llm"

    def __init__(
        self,
        *replies: Reply,
        port: int = 0,
        default: Reply | Callable[[dict], Reply] = DEFAULT_REPLY,
    ) -> None:
        super().__init__(port=port)
        self.default = default
        self.requests: list[Recorded] = []
        self.disconnected = threading.Event()  # set when any client hung up mid-reply
        self._queue: deque[Reply] = deque(replies)
        self._ids = itertools.count(1)
        # GET .../models answers {"data": models}; None answers 404 (a server without a model list)
        self.models: list[dict] | None = None
        self.model_requests: list[Recorded] = []  # the GETs of the model list, apart from the completions
        from .scripted_codex import CodexAuth

        self.codex = CodexAuth(self._root_url)  # the logins /codex/responses accepts, /oauth/token refreshes

    # -- lifecycle (LoopbackServer) ----------------------------------------------------------
    def handler_class(self) -> type[TrackedHandler]:
        return _make_handler(self)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- script -------------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _next_reply(self, body: dict) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if not callable(self.default):
            return self.default
        try:
            answer = self.default(body)
        except Exception as exc:
            # a bug in a notebook's rule function: the client sees it as a server error, the server keeps going
            return reply.error(500, f"the scripted default raised {exc!r}")
        if not isinstance(answer, Reply):
            return reply.error(500, f"the scripted default returned {answer!r}, not a reply")
        return answer

    def _record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)


def scripted_codex_expired() -> str:
    from .scripted_codex import EXPIRED

    return EXPIRED


def _make_handler(llm: ScriptedLLM) -> type[TrackedHandler]:
    class Handler(_Handler):
        owner = llm

    return Handler


class _Handler(TrackedHandler):
    # keep-alive and chunked streams, like a real API server (TrackedHandler speaks HTTP/1.1)
    owner: ScriptedLLM
    _entry: Recorded

    def setup(self) -> None:
        super().setup()
        # many small writes per reply: without this, Nagle's algorithm and the client's delayed ACK add ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.rstrip("/")
        if path.endswith("/oauth/token"):
            self._token(raw)
            return
        anthropic = path.endswith("/messages")
        codex = path.endswith("/codex/responses")
        if not (anthropic or codex) and not path.endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no such endpoint: {self.path}"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        lines = [(k.lower(), v) for k, v in self.headers.items()]
        entry = Recorded(self.path, dict(lines), body, header_lines=lines)
        self._entry = entry
        self.owner._record(entry)
        if codex and not self.owner.codex.accepts(self.headers.get("Authorization") or ""):
            # refused before the script is consulted: the reply is still there for the retry
            self._send_json(401, {"error": {"message": scripted_codex_expired(), "type": "invalid_request_error"}})
            return
        if codex and not body.get("stream"):
            self._send_json(400, {"detail": "Stream must be set to true"})
            return
        answer = self.owner._next_reply(body)
        try:
            if answer.error is not None:
                if self._wait(answer.delay):
                    payload = {"error": {"message": answer.error, "type": "scripted"}}
                    self._send_json(answer.status, {"type": "error", **payload} if anthropic else payload)
            elif anthropic:
                self._answer_anthropic(body, answer)
            elif codex:
                self._answer_codex(body, answer)
            elif body.get("stream") and not answer.json_only:
                self._stream(body, answer)
            elif answer.stream_error is not None:
                self._send_json(200, {"error": {"message": answer.stream_error, "type": "server_error"}})
            elif self._wait(answer.delay):
                self._send_json(200, _completion(body, answer, next(self.owner._ids)))
        except (BrokenPipeError, ConnectionResetError):
            self._hung_up()

    def do_GET(self) -> None:
        if not self.path.rstrip("/").endswith("/models") or self.owner.models is None:
            self._send_json(404, {"error": {"message": f"no such endpoint: {self.path}"}})
            return
        lines = [(k.lower(), v) for k, v in self.headers.items()]
        with self.owner._lock:
            self.owner.model_requests.append(Recorded(self.path, dict(lines), {}, header_lines=lines))
        self._send_json(200, {"object": "list", "data": self.owner.models})

    def _hung_up(self) -> None:
        self._entry.disconnected = True
        self.close_connection = True
        self.owner.disconnected.set()

    # -- waiting, noticing a client that hung up ----------------------------------------------
    def _client_gone(self) -> bool:
        """The client closed its side (cancelled). Nothing else arrives mid-reply, so readable means EOF."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _wait(self, delay: float) -> bool:
        """Sleep `delay` seconds; False (and the request marked) if the client hung up or the server stops."""
        deadline = time.monotonic() + delay
        while True:
            if self._client_gone():
                self._hung_up()
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            if self.owner.stopping.wait(min(left, 0.02)):
                self.close_connection = True
                return False

    # -- answers ------------------------------------------------------------------------------
    def _send_json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _stream(self, body: dict, answer: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunks = list(_stream_chunks(body, answer, next(self.owner._ids)))
        # the pause lands mid-reply (after the role chunk and the first pieces): where an interrupt would come
        pause_at = min(3, len(chunks) - 1)
        for n, chunk in enumerate(chunks):
            if n == pause_at and answer.delay and not self._wait(answer.delay):
                return
            self._write_chunk(f"data: {json.dumps(chunk)}\n\n")
        self._write_chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _answer_anthropic(self, body: dict, answer: Reply) -> None:
        serial = next(self.owner._ids)
        if not body.get("stream") or answer.json_only:
            if self._wait(answer.delay):
                self._send_json(200, _anthropic_message(body, answer, serial))
            return
        self._send_typed_events(list(_anthropic_events(body, answer, serial)), answer)

    def _send_typed_events(self, events: list[dict], answer: Reply) -> None:
        """A stream of `event: TYPE` + `data:` frames (Messages and Responses APIs), paused at the 4th event
        for the reply's delay."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        pause_at = min(3, len(events) - 1)
        for n, event in enumerate(events):
            if n == pause_at and answer.delay and not self._wait(answer.delay):
                return
            self._write_chunk(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _answer_codex(self, body: dict, answer: Reply) -> None:
        from . import scripted_codex

        serial = next(self.owner._ids)
        if answer.json_only:  # a server that answers with the whole response object
            if self._wait(answer.delay):
                self._send_json(200, scripted_codex.response(body, answer, serial))
            return
        self._send_typed_events(list(scripted_codex.events(body, answer, serial, _pieces)), answer)

    def _token(self, raw: bytes) -> None:
        from urllib.parse import parse_qsl

        form = dict(parse_qsl(raw.decode("utf-8", "replace")))
        status, payload = self.owner.codex.refresh(form)
        self._send_json(status, payload)

    def _write_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


# -- the OpenAI wire format -------------------------------------------------------------------
def _arguments(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _usage(body: dict, answer: Reply) -> dict:
    """Token counts estimated from sizes (chars / 4), so they move with the conversation like real ones."""
    prompt = len(json.dumps(body.get("messages", []))) + len(json.dumps(body.get("tools", [])))
    out = len(answer.text or "") + len(answer.reasoning or "")
    out += sum(len(name) + len(_arguments(args)) for name, args, _ in answer.calls)
    usage = {"prompt_tokens": prompt // 4 + 1, "completion_tokens": out // 4 + 1}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def _completion(body: dict, answer: Reply, serial: int) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text}
    if answer.reasoning:
        message["reasoning_content"] = answer.reasoning
    if answer.calls:
        message["tool_calls"] = [
            {
                **({"id": cid} if cid is not None else {}),
                "type": "function",
                "function": {"name": name, "arguments": _arguments(args)},
            }
            for name, args, cid in answer.calls
        ]
    return {
        "id": f"chatcmpl-scripted-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": answer.finish_reason}],
        "usage": _usage(body, answer),
    }


def _pieces(text: str, sizes: tuple[int, ...] = (3, 1, 5, 2, 7, 4)) -> Iterator[str]:
    """Small, uneven pieces, as a real server's token stream arrives."""
    i = 0
    for size in itertools.cycle(sizes):
        if i >= len(text):
            return
        yield text[i : i + size]
        i += size


def _stream_chunks(body: dict, answer: Reply, serial: int) -> Iterator[dict]:
    base = {
        "id": f"chatcmpl-scripted-{serial}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    if answer.stream_error is not None:
        yield {**base, "error": {"message": answer.stream_error, "type": "server_error"}}
        return
    for piece in _pieces(answer.reasoning or ""):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(answer.text or ""):
        yield chunk({"content": piece})
    for index, (name, args, cid) in enumerate(answer.calls):
        head = {"index": index, "type": "function", "function": {"name": name, "arguments": ""}}
        if cid is not None:
            head["id"] = cid
        yield chunk({"tool_calls": [head]})
        for piece in _pieces(_arguments(args)):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, answer.finish_reason)
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(body, answer)}


# -- the Anthropic Messages wire format -------------------------------------------------------------
_STOP = {"tool_calls": "tool_use", "stop": "end_turn", "content_filter": "refusal"}


def _anthropic_usage(body: dict, answer: Reply) -> dict:
    usage = _usage({"messages": body.get("messages", []), "tools": body.get("tools", [])}, answer)
    return {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}


def _anthropic_blocks(answer: Reply, serial: int) -> list[dict]:
    blocks: list[dict] = []
    if answer.reasoning:
        blocks.append({"type": "thinking", "thinking": answer.reasoning, "signature": f"scripted-signature-{serial}"})
    if answer.text:
        blocks.append({"type": "text", "text": answer.text})
    for n, (name, args, cid) in enumerate(answer.calls):
        blocks.append({"type": "tool_use", "id": cid or f"toolu_scripted_{serial}_{n}", "name": name, "input": args})
    return blocks


def _anthropic_message(body: dict, answer: Reply, serial: int) -> dict:
    content = []
    for block in _anthropic_blocks(answer, serial):
        if block["type"] == "tool_use" and isinstance(block["input"], str):  # raw text: only a stream can carry it
            block = {**block, "input": {}}
        content.append(block)
    return {
        "id": f"msg_scripted_{serial}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": content,
        "stop_reason": _STOP.get(answer.finish_reason, answer.finish_reason),
        "usage": _anthropic_usage(body, answer),
    }


def _anthropic_events(body: dict, answer: Reply, serial: int) -> Iterator[dict]:
    usage = _anthropic_usage(body, answer)
    message = {"id": f"msg_scripted_{serial}", "type": "message", "role": "assistant", "content": []}
    yield {
        "type": "message_start",
        "message": {**message, "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1}},
    }
    if answer.stream_error is not None:
        yield {"type": "error", "error": {"type": "overloaded_error", "message": answer.stream_error}}
        return
    for index, block in enumerate(_anthropic_blocks(answer, serial)):
        kind = block["type"]
        if kind == "thinking":
            yield {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}}
            for piece in _pieces(block["thinking"]):
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "thinking_delta", "thinking": piece},
                }
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": block["signature"]},
            }
        elif kind == "text":
            yield {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            for piece in _pieces(block["text"]):
                yield {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}
        else:
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield {"type": "content_block_start", "index": index, "content_block": head}
            for piece in _pieces(_arguments(block["input"])):
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
        yield {"type": "content_block_stop", "index": index}
    stop = _STOP.get(answer.finish_reason, answer.finish_reason)
    yield {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": usage["output_tokens"]}}
    yield {"type": "message_stop"}
