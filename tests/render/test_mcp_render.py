"""The MCP result view: every content block kind, structured content as a tree, errors marked, nothing active."""

from __future__ import annotations

from cireil.render import result_bundle
from cireil.runtime.toolkit.result import ToolResult

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
CONTENT = [
    {"type": "text", "text": "hello <b>world</b>"},
    {"type": "image", "mimeType": "image/png", "data": PNG},
    {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
    {"type": "resource_link", "uri": "https://example.com/doc", "name": "doc"},
    {"type": "resource_link", "uri": "javascript:alert(1)", "name": "trap"},
    {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "inside"}},
    {"type": "image", "mimeType": "text/html", "data": PNG},
    {"type": "mystery", "x": 1},
]


def bundle(data: dict, tool: str = "mcp__demo__tool") -> dict:
    return result_bundle(ToolResult(tool, {}, data))


def test_every_block_kind_has_its_view():
    out = bundle({"content": CONTENT, "structuredContent": {"a": [1, {"b": None}]}})
    html, text = out["text/html"], out["text/plain"]
    assert "hello &lt;b&gt;world&lt;/b&gt;" in html
    assert f'<img src="data:image/png;base64,{PNG}"' in html
    assert '<audio controls src="data:audio/wav;base64,UklGRg=="' in html
    assert '<a href="https://example.com/doc"' in html
    assert 'href="javascript' not in html and "javascript:alert(1)" in html  # shown, never clickable
    assert "<details" in html and "inside" in html
    assert "data:text/html" not in html  # an "image" that is not an image is not inlined
    assert "mystery" in html
    assert "<script" not in html and "<style" not in html
    assert "hello <b>world</b>" in text and "[image image/png, 70 bytes]" in text
    assert '"b": null' in text
    assert out["application/vnd.cireil.result+json"]["structuredContent"] == {"a": [1, {"b": None}]}


def test_an_is_error_result_is_marked_but_keeps_its_blocks():
    out = bundle({"content": [{"type": "text", "text": "no such city"}], "error": "no such city", "success": False})
    assert "failed" in out["text/plain"] and "no such city" in out["text/html"]
    assert "the server reported an error" in out["text/html"]


def test_a_transport_failure_uses_the_error_view():
    out = bundle({"error": "MCP server 'demo': timed out after 5 ms", "success": False})
    assert out["text/plain"].startswith("mcp__demo__tool failed: MCP server 'demo': timed out")
