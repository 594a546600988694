"""A deliberately misbehaving Streamable HTTP server (stdlib, loopback), one quirk per path.

/redirect    307 to another endpoint
/fail-init   HTTP 500 with a JSON-RPC error on initialize
/keepalive   tools/list answered by an SSE stream of keepalive comments that never ends
/quirky      CRLF framing, a priming event, a ping and a notification before each response
/expire      the first session is forgotten (404) after initialize
/pages       tools/list hands back nextCursor "" forever
/version     initialize picks protocol version 2024-11-05
Every request is recorded in `received` (method, path, headers, JSON body).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object", "properties": {"x": {}}}}


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
        route = getattr(self, "_" + self.path.strip("/").replace("-", "_"), None)
        if route is None:
            self._send(404, b"no such endpoint", "text/plain")
        elif "id" not in body or "method" not in body:
            self._send(202, b"", "text/plain")  # a notification or our answer to the server's ping
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
