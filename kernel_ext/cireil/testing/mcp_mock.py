"""A recorded turn's MCP traffic served as a Streamable HTTP MCP server, for any MCP client.

    with McpMock(cassette) as mock:                 # 127.0.0.1, a free port; one path per recorded server
        mock.url("demo")                            # http://127.0.0.1:PORT/mcp/demo
        ...                                         # any client lists the recorded tools and calls them
        mock.calls                                  # what was asked: [{"server", "tool", "arguments", "answered"}]

Both eras of the protocol, whatever the recording's revision (the results are the same JSON):
- the handshake revisions (2025-03-26, 2025-06-18, 2025-11-25; 2024-11-05 too): `initialize` answers the
  revision the client asked for when it is one of them, else the recording's (or the newest), with the
  recorded serverInfo and instructions and a fresh `Mcp-Session-Id`; a request naming a session this server
  does not know gets 404, as after a restart; DELETE ends the session.
- 2026-07-28: no handshake and no session; `server/discover` says which versions are spoken; each request
  carries its version in `params._meta` and repeats method and tool name in `Mcp-Method` / `Mcp-Name`, which
  must match the body (-32020 otherwise, as the SDK's server answers); results get `resultType: "complete"`.
`tools/list` is the recorded listing; `tools/call` the recorded answer (see mcp_cassette.py for the matching),
or a JSON-RPC error (-32050) whose message is `Unrecorded.message`. Answers are JSON, or a one-event SSE stream
when the client accepts only that. GET (a server-to-client stream) is 405: the mock never sends on its own.
Answers are consumed across clients and sessions (a cassette answers each recorded call once); `reset()`
rewinds. Standard library only.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import uuid
from typing import Any
from urllib.parse import quote

from .loopback import LoopbackServer, TrackedHandler
from .mcp_cassette import Cassette, Unrecorded

__all__ = ["HANDSHAKE", "MODERN", "UNRECORDED", "McpMock"]

HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # reached through initialize
MODERN = "2026-07-28"  # stateless: version per request, no initialize
UNRECORDED = -32050  # an implementation-defined server error: "this call was not recorded"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
HEADER_MISMATCH, UNSUPPORTED_VERSION = -32020, -32022
MAX_BODY = 4 * 1024 * 1024  # bytes of one request; a recorded call's arguments are far smaller
_MAX_SESSIONS = 10_000
_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
_NAMED = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}


class McpMock(LoopbackServer):
    """Serves each server of the cassette at /mcp/<server name> (percent-encoded in the URL)."""

    thread_name = "cireil-mcp-mock"

    def __init__(self, cassette: Cassette | dict, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(port=port)
        self.cassette = cassette if isinstance(cassette, Cassette) else Cassette(cassette)
        self.host = host
        self.calls: list[dict[str, Any]] = []  # every tools/call asked, answered or not
        self.sessions: dict[str, str] = {}  # session id -> server name (handshake revisions only)
        self._paths = {f"/mcp/{_quote(name)}": name for name in self.cassette.servers}

    def handler_class(self) -> type[TrackedHandler]:
        return type("McpMockHandler", (_Handler,), {"owner": self})

    def start(self) -> McpMock:
        if self._server is None and self.host != "127.0.0.1":
            self._bind_host()
        super().start()
        return self

    def _bind_host(self) -> None:
        # LoopbackServer binds 127.0.0.1; another host (asked for explicitly) is bound the same way otherwise
        import socket
        from http.server import ThreadingHTTPServer

        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        kind = type("McpMockHttp", (ThreadingHTTPServer,), {"address_family": family})
        server = kind((self.host.strip("[]"), self._port), self.handler_class())
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=self.thread_name, daemon=True
        )
        self._thread.start()

    def url(self, server: str) -> str:
        """The endpoint of one recorded server; KeyError naming the recorded ones."""
        self.cassette.server(server)
        host = f"[{self.host.strip('[]')}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp/{_quote(server)}"

    @property
    def urls(self) -> dict[str, str]:
        return {name: self.url(name) for name in self.cassette.servers}

    def reset(self) -> None:
        """Every recorded answer unused again, `calls` and sessions forgotten."""
        self.cassette.reset()
        with self._lock:
            self.calls.clear()
            self.sessions.clear()


class _Reply(Exception):
    """An answer decided early: HTTP status, JSON-RPC error (code, message, data) or none, extra headers."""

    def __init__(self, status: int, code: int | None = None, message: str = "", data: Any = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.data = status, code, message, data


class _Handler(TrackedHandler):
    owner: McpMock
    # headers and body go out in two writes: with Nagle on, a kept-alive client waits ~40 ms for each answer
    disable_nagle_algorithm = True

    # -- HTTP verbs ---------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        if self._server_name() is None:
            return self._plain(404, "no MCP server at this path; the mock serves " + ", ".join(self.owner._paths))
        self._plain(405, "this mock sends nothing unasked: no server-to-client stream", {"Allow": "POST, DELETE"})

    def do_DELETE(self) -> None:
        name = self._server_name()
        if name is None:
            return self._plain(404, "no MCP server at this path")
        sid = self.headers.get("mcp-session-id")
        with self.owner._lock:
            known = sid is not None and self.owner.sessions.pop(sid, None) is not None
        self._plain(200 if known or sid is None else 404, "")

    def do_POST(self) -> None:
        rid: Any = None
        try:
            name = self._server_name()
            if name is None:
                raise _Reply(404, INVALID_REQUEST, f"no MCP server at {self.path[:200]}")
            message = self._read_message()
            rid = message.get("id")
            if "method" not in message:
                raise _Reply(202)  # a client's response (to nothing we asked): accepted, ignored
            if not isinstance(message["method"], str):
                raise _Reply(400, INVALID_REQUEST, "method must be a string")
            if "id" not in message:
                raise _Reply(202)  # a notification: initialized, cancelled, ...
            if isinstance(rid, bool) or not isinstance(rid, str | int):
                rid = None
                raise _Reply(400, INVALID_REQUEST, "a request's id is a string or an integer (MCP)")
            modern = self._era(message)
            result, headers = self._result(name, message, modern)
            if modern:
                result = {**result, "resultType": result.get("resultType", "complete")}
            self._rpc(200, {"jsonrpc": "2.0", "id": rid, "result": result}, headers)
        except _Reply as reply:
            if reply.code is None:
                self._plain(reply.status, "")
            else:
                error: dict[str, Any] = {"code": reply.code, "message": reply.message}
                if reply.data is not None:
                    error["data"] = reply.data
                self._rpc(reply.status, {"jsonrpc": "2.0", "id": rid, "error": error})
        except Exception as exc:  # never a dropped connection: a bug shows as a JSON-RPC internal error
            error = {"code": -32603, "message": f"the mock failed: {type(exc).__name__}: {str(exc)[:300]}"}
            self._rpc(500, {"jsonrpc": "2.0", "id": rid, "error": error})

    # -- reading --------------------------------------------------------------------------------------------
    def _server_name(self) -> str | None:
        return self.owner._paths.get(self.path.split("?", 1)[0].rstrip("/") or "/")

    def _read_message(self) -> dict[str, Any]:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            self.close_connection = True
            raise _Reply(411, INVALID_REQUEST, "send the request with a Content-Length")
        try:
            length = int(self.headers.get("content-length", "0"))
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.close_connection = True  # the unread body must not be taken for the next request
            raise _Reply(413, INVALID_REQUEST, f"the request body is over {MAX_BODY} bytes (or its length is invalid)")
        raw = self.rfile.read(length)
        try:
            message = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise _Reply(400, PARSE_ERROR, f"the body is not JSON: {str(exc)[:200]}") from None
        if isinstance(message, list):
            raise _Reply(400, INVALID_REQUEST, "JSON-RPC batches are not supported; send one message per POST")
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            raise _Reply(400, INVALID_REQUEST, "expected one JSON-RPC 2.0 message")
        return message

    def _era(self, message: dict[str, Any]) -> bool:
        """True for a 2026-07-28 request (checked: version and routing headers); False for the handshake era."""
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(_META_VERSION) if isinstance(meta, dict) else None
        if version is None:
            if message["method"] == "server/discover":
                raise _Reply(400, INVALID_REQUEST, f"server/discover needs params._meta[{_META_VERSION!r}]")
            self._check_session(message["method"])
            return False
        if version != MODERN:
            supported = {"supported": [MODERN], "requested": version}
            raise _Reply(400, UNSUPPORTED_VERSION, "Unsupported protocol version", supported)
        header = self.headers.get("mcp-protocol-version")
        if header is not None and header != version:
            raise _Reply(400, HEADER_MISMATCH, "MCP-Protocol-Version header does not match params._meta")
        if self.headers.get("mcp-method") != message["method"]:
            raise _Reply(400, HEADER_MISMATCH, "Mcp-Method header does not match the request's method")
        key = _NAMED.get(message["method"])
        if key is not None:
            named = params.get(key)
            if _header_text(self.headers.get("mcp-name")) != named:
                raise _Reply(400, HEADER_MISMATCH, f"Mcp-Name header does not match the request's {key!r}")
        return True

    def _check_session(self, method: str) -> None:
        sid = self.headers.get("mcp-session-id")
        if method == "initialize" or sid is None:
            return  # no session asked for: answered as a stateless server would
        with self.owner._lock:
            known = sid in self.owner.sessions
        if not known:
            raise _Reply(404, INVALID_REQUEST, "Session not found")

    # -- answering ------------------------------------------------------------------------------------------
    def _result(self, name: str, message: dict[str, Any], modern: bool) -> tuple[dict[str, Any], dict[str, str]]:
        method = message["method"]
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        record = self.owner.cassette.servers[name]
        if method == "initialize" and not modern:
            return self._initialize(name, record, params)
        if method == "server/discover" and modern:
            result: dict[str, Any] = {
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {"listChanged": False}},
                "cacheScope": "private",
                "ttlMs": 0,
            }
            if record["instructions"] is not None:
                result["instructions"] = record["instructions"]
            if record["serverInfo"] is not None:
                result["_meta"] = {_META_SERVER_INFO: record["serverInfo"]}
            return result, {}
        if method == "ping":
            return {}, {}
        if method == "tools/list":
            result = {"tools": record["tools"]}
            return ({**result, "cacheScope": "private", "ttlMs": 0} if modern else result), {}
        if method == "tools/call":
            return self._call(name, params), {}
        raise _Reply(404 if modern else 200, METHOD_NOT_FOUND, "Method not found", method[:200])

    def _initialize(self, name: str, record: dict, params: dict) -> tuple[dict[str, Any], dict[str, str]]:
        asked = params.get("protocolVersion")
        if asked in HANDSHAKE:
            version = asked
        elif record["revision"] in HANDSHAKE:
            version = record["revision"]
        else:
            version = HANDSHAKE[-1]
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": record["serverInfo"] or {"name": name, "version": "recorded"},
        }
        if record["instructions"] is not None:
            result["instructions"] = record["instructions"]
        sid = uuid.uuid4().hex
        with self.owner._lock:
            if len(self.owner.sessions) >= _MAX_SESSIONS:  # a client that never says DELETE: oldest forgotten
                self.owner.sessions.pop(next(iter(self.owner.sessions)))
            self.owner.sessions[sid] = name
        return result, {"Mcp-Session-Id": sid}

    def _call(self, name: str, params: dict) -> dict[str, Any]:
        tool, arguments = params.get("name"), params.get("arguments")
        if not isinstance(tool, str):
            raise _Reply(200, INVALID_PARAMS, "tools/call needs params.name, the tool's name")
        seen: dict[str, Any] = {"server": name, "tool": tool, "arguments": arguments, "answered": False}
        with self.owner._lock:
            if len(self.owner.calls) < 100_000:
                self.owner.calls.append(seen)
        try:
            call = self.owner.cassette.answer(name, tool, arguments)
        except Unrecorded as exc:
            raise _Reply(200, UNRECORDED, exc.message, exc.data()) from None
        seen["answered"] = True
        if call["error"] is not None:
            error = call["error"]
            raise _Reply(200, error["code"], error["message"], error.get("data"))
        if call["result"] is None:
            why = call.get("notRecorded") or "it got no answer (it timed out?)"
            raise _Reply(200, UNRECORDED, f"the recorded call of {tool!r} on MCP server {name!r} has no answer: {why}")
        return call["result"]

    # -- writing --------------------------------------------------------------------------------------------
    def _rpc(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()  # ASCII: a lone surrogate asked about is escaped, never an encode error
        accept = (self.headers.get("accept") or "").lower()
        if status == 200 and "text/event-stream" in accept and "application/json" not in accept:
            # a client that takes only a stream gets one event holding the response
            self._send(status, b"event: message\ndata: " + data + b"\n\n", "text/event-stream", headers)
        else:
            self._send(status, data, "application/json", headers)

    def _plain(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, text.encode(), "text/plain; charset=utf-8", headers)

    def _send(self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


def _quote(name: str) -> str:
    return quote(name, safe="")


def _header_text(value: str | None) -> str | None:
    """An Mcp-Name value as sent: plain, or the spec's `=?base64?...?=` wrapping (None if malformed)."""
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    try:
        return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
