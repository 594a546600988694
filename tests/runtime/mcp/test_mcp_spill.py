"""A 100 MB tools/call answer is never held whole: it streams to disk, the model gets its beginning and a note.

The server streams the answer in 1 MiB pieces (chunked) from a loopback socket in this process, so
tracemalloc sees everything either side allocates; the bound asserted is far below the answer's size.
"""

from __future__ import annotations

import asyncio
import json
import socket
import tracemalloc

import pytest

from cireil.runtime.mcp.errors import McpError
from cireil.runtime.mcp.spill import DISK_LIMIT, SPILLED, Spill
from cireil.runtime.mcp.transport import Transport
from mcp_peers.rawserver import RawServer

SIZE = 100 * 1024 * 1024
PIECE = b"0123456789abcdef" * 65536  # 1 MiB, one object reused for every piece
LIMIT = 256 * 1024


def streaming(kind: str, size: int = SIZE):
    """A script answering each request with a chunked JSON or SSE body holding a text of `size` bytes."""

    def script(conn: socket.socket, n: int) -> None:
        while (body := server[0].read_request(conn)) is not None:
            rid = json.loads(body)["id"]
            head = f'{{"jsonrpc":"2.0","id":{rid},"result":{{"content":[{{"type":"text","text":"'.encode()
            tail = b'"}]}}'
            if kind == "sse":
                head, tail = b"event: message\r\ndata: " + head, tail + b"\r\n\r\n"
            framing = f"Content-Type: {_TYPES[kind]}\r\nTransfer-Encoding: chunked\r\n\r\n"
            conn.sendall(b"HTTP/1.1 200 OK\r\n" + framing.encode())
            _chunk(conn, head)
            for _ in range(size // len(PIECE)):
                _chunk(conn, PIECE)
            _chunk(conn, tail)
            conn.sendall(b"0\r\n\r\n")

    server: list[RawServer] = []
    server.append(RawServer(script))
    return server[0]


_TYPES = {"json": "application/json", "sse": "text/event-stream"}


def _chunk(conn: socket.socket, data: bytes) -> None:
    conn.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def call(url: str, spill: Spill | None) -> dict:
    async def go() -> dict:
        transport = Transport(url, {})
        transport.adopt_modern({})
        try:
            return await transport.request("tools/call", {"name": "big", "arguments": {}}, spill=spill)
        finally:
            await transport.close()

    return asyncio.run(go())


@pytest.mark.parametrize("kind", ["json", "sse"])
def test_a_100_mb_answer_streams_to_disk_and_is_never_held(tmp_path, kind):
    server = streaming(kind)
    try:
        tracemalloc.start()
        try:
            result = call(server.url(), Spill(tmp_path, LIMIT, "mcp__s__big"))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        server.close()
    assert peak < 16 * 1024 * 1024, peak  # was the whole answer and copies of it (+190 MiB RSS)
    note = result["resultTruncated"]
    saved = tmp_path / note["savedAs"].removeprefix("<agent dir>/")
    assert saved.stat().st_size == note["bytes"] >= SIZE and note["limit"] == LIMIT
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
    with saved.open("rb") as f:
        start = f.read(100)
    assert start.startswith(b'{"jsonrpc":"2.0"')  # the answer's data as it came (an SSE event: its data)
    preview = result["content"][0]["text"]
    assert preview.startswith('{"jsonrpc":"2.0"') and LIMIT // 4 < len(json.dumps(preview)) <= LIMIT // 2
    assert result[SPILLED] is True  # marked by a key no server's JSON can make
    shown = {k: v for k, v in result.items() if k is not SPILLED}
    assert len(json.dumps(shown)) < LIMIT + 4096  # what the model gets is about the limit, not the answer


def test_the_preview_fits_the_limit_whatever_the_text(tmp_path):
    from cireil.runtime.mcp.spill import _preview

    for text in ('"' * 10_000, "日本語" * 10_000, "\udcff" * 10_000, "plain " * 10_000):
        preview = _preview([text.encode("utf-8", "surrogatepass")], 4096)
        assert 1024 < len(json.dumps(preview, ensure_ascii=False).encode()) <= 4096


def test_the_copy_on_disk_stops_at_its_own_limit(tmp_path, monkeypatch):
    from cireil.runtime.mcp import spill

    monkeypatch.setattr(spill, "DISK_LIMIT", 8 * 1024 * 1024)
    server = streaming("json", size=32 * 1024 * 1024)
    try:
        result = call(server.url(), Spill(tmp_path, LIMIT, "t"))
    finally:
        server.close()
    note = result["resultTruncated"]
    assert note["bytes"] == 8 * 1024 * 1024 and "The first 8388608 bytes of it are kept" in note["note"]
    assert (tmp_path / note["savedAs"].removeprefix("<agent dir>/")).stat().st_size == 8 * 1024 * 1024
    assert DISK_LIMIT == 256 * 1024 * 1024


def test_an_answer_under_the_spill_threshold_is_parsed_as_usual(tmp_path):
    server = streaming("sse", size=2 * 1024 * 1024)  # over the limit, under 4x it (1 MiB here: limit 512 KiB)
    try:
        result = call(server.url(), Spill(tmp_path, 1024 * 1024, "t"))
    finally:
        server.close()
    assert len(result["content"][0]["text"]) == 2 * 1024 * 1024 and "resultTruncated" not in result
    assert not (tmp_path / ".cireil").exists()


def test_without_a_spill_an_oversized_answer_is_refused(monkeypatch):
    from cireil.runtime.mcp import transport

    monkeypatch.setattr(transport, "MESSAGE_LIMIT", 4 * 1024 * 1024)
    for kind, error in (("json", "the answer to tools/call is over 4194304 bytes"), ("sse", "an event in the answer")):
        server = streaming(kind, size=16 * 1024 * 1024)
        try:
            with pytest.raises(McpError, match=error):
                call(server.url(), None)
        finally:
            server.close()
