"""A deliberately misbehaving Streamable HTTP server (stdlib, loopback), one quirk per path.

/redirect    307 to another endpoint
/fail-init   HTTP 500 with a JSON-RPC error on initialize
/keepalive   tools/list answered by an SSE stream of keepalive comments that never ends
/quirky      CRLF framing, a priming event, a ping and a notification before each response
/expire      the first session is forgotten (404) after initialize
/pages       tools/list hands back nextCursor "" forever
/version     initialize picks protocol version 2024-11-05
/plain/<how> a plain legacy server whose answer to the 2026-07-28 probe (server/discover) is DISCOVER[how]
             (/plain/hang: answered only after 5 s)
/modern      speaks only 2026-07-28: no handshake, tools whose arguments are mirrored in headers
/inspect     tools with poor definitions (see INSPECT_TOOLS), results that break their outputSchema, a huge tool
/deeplist    tools/list answered with a result nested 100,000 levels deep
/schemas     tools/list with tools whose inputSchema is not an object schema
/hostile     tools `deep` (100,000-deep structuredContent) and `huge` (a text block of `size` bytes)
The other legacy routes answer server/discover as a legacy SDK server does, 404 with -32601; /redirect
and /fail-init answer it as they answer everything.
Every request is recorded in `received` (method, path, headers, JSON body).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object", "properties": {"x": {}}}}
MODERN = "2026-07-28"


def _error(code: int, message: str, data: Any = None, rid: Any = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


# (HTTP status, body, extra headers) answering server/discover on /plain/<how>, as legacy servers were seen to
DISCOVER: dict[str, tuple[int, dict, dict[str, str]]] = {
    "not-found": (404, _error(-32601, "Method not found"), {}),
    "rpc-not-found": (200, _error(-32601, "Method not found", rid=1), {}),  # 200 with a JSON-RPC error
    # mcp 1.30 stateful: a 400 that carries a freshly minted session id, which must not be adopted
    "missing-session": (400, _error(-32600, "Bad Request: Missing session ID"), {"Mcp-Session-Id": "minted"}),
    "405": (405, {}, {"Allow": "GET, DELETE"}),
    "legacy-versions": (400, _error(-32022, "Unsupported protocol version", {"supported": ["2025-06-18"]}), {}),
    "future-only": (400, _error(-32022, "Unsupported protocol version", {"supported": ["2027-01-01"]}), {}),
    "header-mismatch": (400, _error(-32020, "mcp-method header does not match the body"), {}),
    "discover-legacy": (200, {"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": ["2025-11-25"]}}, {}),
    "server-error": (500, _error(-32603, "probe exploded"), {}),
}
# a modern server's tools: x-mcp-header marks (valid, nested, invalid) and a name that is not plain ASCII
MODERN_TOOLS = [
    TOOL,
    {"name": "héllo wörld", "inputSchema": {"type": "object"}},
    {
        "name": "routed",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry"}}},
                "note": {"type": "string"},
            },
        },
    },
    {
        "name": "bad-mark",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}},
    },
    {"name": "ask", "inputSchema": {"type": "object"}},
]


# tools a definition lint has things to say about, and output schemas their results break
HUGE_DESCRIPTION = "Looks things up. " * 1500  # ~25,000 characters
INSPECT_TOOLS = [
    {
        "name": "forecast",
        "description": "Weather forecast for a city.",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name."}},
            "required": ["city"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"temp": {"type": "number"}, "city": {"type": "string"}},
            "required": ["temp", "city"],
        },
    },
    {
        "name": "sloppy",
        "inputSchema": {
            "type": "object",
            "properties": {
                "mode": {"type": "integer", "enum": ["fast", "slow"], "description": "How."},
                "free": {},
                "size": {"type": "integer"},
            },
            "required": ["mode", "missing"],
        },
    },
    {
        "name": "huge",
        "description": HUGE_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {f"field{i:03d}": {"type": "string", "description": f"Field {i}."} for i in range(300)},
        },
    },
    {
        "name": "matches",
        "description": "Returns what its outputSchema promises.",
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    },
]
INSPECT_RESULTS = {
    "forecast": {"content": [{"type": "text", "text": "hot"}], "structuredContent": {"temp": "hot"}},
    "matches": {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"ok": True}},
}


class Rogue(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[dict[str, Any]] = []
        self.sessions = 0
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def methods(self, path: str) -> list[str]:
        return [r["method"] for r in self.received if r["path"] == path]


class _Handler(BaseHTTPRequestHandler):
    server: Rogue
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_DELETE(self) -> None:
        self.server.received.append(
            {"method": "DELETE", "path": self.path, "headers": dict(self.headers), "body": None}
        )
        self._send(200, b"", "text/plain")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length) or b"null")
        method = body.get("method") if isinstance(body, dict) and "method" in body else "response"
        self.server.received.append({"method": method, "path": self.path, "headers": dict(self.headers), "body": body})
        route = getattr(self, "_" + self.path.strip("/").split("/")[0].replace("-", "_"), None)
        if route is None:
            self._send(404, b"no such endpoint", "text/plain")
        elif "id" not in body or "method" not in body:
            self._send(202, b"", "text/plain")  # a notification or our answer to the server's ping
        elif method == "server/discover" and route not in (self._modern, self._redirect, self._fail_init):
            how = self.path.rsplit("/", 1)[-1]
            if how == "hang":  # a probe that is never answered in time
                time.sleep(5)
            status, answer, extra = DISCOVER.get(how, DISCOVER["not-found"])
            if "id" in answer and answer["id"] is not None:
                answer = {**answer, "id": body["id"]}
            self._send(status, json.dumps(answer).encode() if answer else b"", "application/json", extra)
        else:
            route(body)

    # -- helpers ------------------------------------------------------------------------------
    def _send(self, code: int, data: bytes, kind: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _json(self, body: dict, result: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
        self._send(200, data, "application/json; charset=utf-8", extra)

    def _standard(self, body: dict, extra: dict[str, str] | None = None, version: str = "2025-06-18") -> bool:
        """Answer initialize and tools/list the ordinary way; False for anything else."""
        if body["method"] == "initialize":
            result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "rogue"}}
            self._json(body, result, extra)
        elif body["method"] == "tools/list":
            self._json(body, {"tools": [TOOL]})
        else:
            return False
        return True

    # -- routes -------------------------------------------------------------------------------
    def _plain(self, body: dict) -> None:
        if not self._standard(body, {"Mcp-Session-Id": "plain"}, version="2025-11-25"):
            self._json(body, {"content": [{"type": "text", "text": "plain"}]})

    def _modern(self, body: dict) -> None:
        method, params = body["method"], body.get("params") or {}
        meta = params.get("_meta") or {}
        if meta.get("io.modelcontextprotocol/protocolVersion") != MODERN:
            self._send(400, json.dumps(_error(-32602, "missing _meta", rid=body["id"])).encode(), "application/json")
        elif method == "server/discover":
            result = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "instructions": "Modern notes."}
            self._json(body, result, {"Set-Cookie": "lb=replica-2; Path=/"})  # a load balancer's stickiness
        elif method == "tools/list":
            self._json(body, {"tools": MODERN_TOOLS, "ttlMs": 0, "cacheScope": "private", "resultType": "complete"})
        elif method == "tools/call" and params.get("name") == "ask":
            self._json(body, {"resultType": "input_required", "inputRequests": {"q": {"method": "roots/list"}}})
        elif method == "tools/call":
            seen = {
                k: v for k, v in self.headers.items() if k.lower().startswith("mcp-param-") or k.lower() == "mcp-name"
            }
            self._json(body, {"content": [{"type": "text", "text": json.dumps(seen, sort_keys=True)}]})
        else:
            self._send(404, json.dumps(_error(-32601, "Method not found", rid=body["id"])).encode(), "application/json")

    def _inspect(self, body: dict) -> None:
        if body["method"] == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": False}, "logging": {}},
                "serverInfo": {"name": "rogue-inspect", "version": "9"},
                "instructions": "Inspect <b>me</b>.",
            }
            self._json(body, result, {"Mcp-Session-Id": "insp-1", "Set-Cookie": "sid=cookie-secret; Path=/"})
        elif body["method"] == "tools/list":
            self._json(body, {"tools": INSPECT_TOOLS})
        else:
            name = body["params"]["name"]
            self._json(body, INSPECT_RESULTS.get(name, {"content": [{"type": "text", "text": name}]}))

    def _deeplist(self, body: dict) -> None:
        if body["method"] == "tools/list":
            deep = "[" * 100_000 + "]" * 100_000
            data = f'{{"jsonrpc":"2.0","id":{body["id"]},"result":{{"tools":[TOOL, {deep}]}}}}'
            self._send(200, data.replace("TOOL", json.dumps(TOOL)).encode(), "application/json")
        else:
            self._standard(body)

    def _schemas(self, body: dict) -> None:
        if body["method"] == "tools/list":
            tools = [
                TOOL,
                {"name": "stringy", "inputSchema": {"type": "string"}},
                {"name": "listy", "inputSchema": [{"type": "object"}]},
            ]
            self._json(body, {"tools": tools})
        else:
            self._standard(body)

    def _hostile(self, body: dict) -> None:
        if body["method"] == "tools/list":
            tools = [
                {"name": "deep", "inputSchema": {"type": "object"}},
                {"name": "huge", "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}}},
            ]
            self._json(body, {"tools": tools})
        elif body["method"] == "tools/call" and body["params"]["name"] == "deep":
            deep = '{"a":' * 100_000 + "1" + "}" * 100_000
            text = '{"content":[{"type":"text","text":"deep"}],"structuredContent":' + deep + "}"
            self._send(200, f'{{"jsonrpc":"2.0","id":{body["id"]},"result":{text}}}'.encode(), "application/json")
        elif body["method"] == "tools/call":
            size = int(body["params"].get("arguments", {}).get("size", 10))
            text = ("0123456789abcdef" * (size // 16 + 1))[:size]
            self._json(body, {"content": [{"type": "text", "text": text}]})
        else:
            self._standard(body)

    def _redirect(self, body: dict) -> None:
        self._send(307, b"", "text/plain", {"Location": "http://127.0.0.1:9/elsewhere/mcp"})

    def _fail_init(self, body: dict) -> None:
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "database offline"}}
        self._send(500, json.dumps(error).encode(), "application/json")

    def _version(self, body: dict) -> None:
        self._standard(body, version="2024-11-05")

    def _pages(self, body: dict) -> None:
        if body["method"] == "tools/list":
            self._json(body, {"tools": [TOOL], "nextCursor": ""})
        else:
            self._standard(body)

    def _keepalive(self, body: dict) -> None:
        if body["method"] == "initialize":
            self._standard(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            for _ in range(400):  # ~20 s at most, far beyond any test's deadline
                self.wfile.write(b": keepalive\n\n")
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            pass
        self.close_connection = True

    def _expire(self, body: dict) -> None:
        if body["method"] == "initialize":
            self.server.sessions += 1
            self._standard(body, {"Mcp-Session-Id": f"s{self.server.sessions}"})
        elif self.headers.get("mcp-session-id") == "s1" and body["method"] == "tools/call":
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}
            self._send(404, json.dumps(error).encode(), "application/json")
        elif not self._standard(body):
            self._json(body, {"content": [{"type": "text", "text": self.headers.get("mcp-session-id", "")}]})

    def _quirky(self, body: dict) -> None:
        if body["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "quirky"},
                "instructions": "Quirky instructions.",
            }
        elif body["method"] == "tools/list":
            result = {"tools": [TOOL]}
        else:
            result = {"content": [{"type": "text", "text": json.dumps(body["params"]["arguments"])}]}
        answer = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result})
        # data split over two lines, joined by the client with "\n": cut where JSON allows whitespace
        half = answer.index(", ") + 1
        stream = (
            "id: prime-1\r\ndata:\r\n\r\n"  # the priming event: an id with empty data
            ": keepalive\r\n\r\n"
            'event: message\r\ndata: {"jsonrpc":"2.0","id":"srv-1","method":"ping"}\r\n\r\n'
            'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}\r\n\r\n'
            "event: other\r\ndata: ignored\r\n\r\n"
            f"event: message\r\nid: 2\r\ndata:{answer[:half]}\r\ndata: {answer[half:]}\r\n\r\n"
        )
        self._send(200, stream.encode(), "text/event-stream", {"Mcp-Session-Id": "quirk"})
