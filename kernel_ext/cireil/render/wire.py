"""MCP wire exchanges (runtime/mcp/wirelog.py, as dicts) shown to a person: text and escaped HTML.

Used by the "wire" fold of an MCP result and by `%cireil mcp log`. Everything from the server
(headers, bodies, event data) is escaped; bodies are shown as indented JSON and cut when long.
"""

from __future__ import annotations

import json
from typing import Any

from .html import BORDER, ERROR, FG_DIM, MONO, OK, WARN, esc

SHOWN_CHARS = 20_000  # of one message in the HTML; the export keeps what the log kept


def summary(entry: dict[str, Any]) -> str:
    """One line: `#3 POST tools/call → 200 sse · 2026-07-28 · connect 0.4 · first byte 1.1 · total 3.2 ms`."""
    response = entry.get("response") or {}
    status = response.get("status")
    answer = f"{status} {response.get('type') or ''}".strip() if status is not None else "no answer"
    t = entry.get("timings_ms") or {}
    times = [f"{name} {t[key]:.1f}" for key, name in _TIMES if t.get(key) is not None]
    parts = [f"#{entry.get('seq')} {entry.get('http')} {entry.get('method')} → {answer}"]
    if entry.get("revision"):
        parts.append(str(entry["revision"]))
    if times:
        parts.append(" · ".join(times) + " ms")
    if entry.get("error"):
        parts.append(f"error: {entry['error']}")
    return " · ".join(parts)


_TIMES = (("connect", "connect"), ("first_byte", "first byte"), ("total", "total"))


def text(entries: list[dict[str, Any]], *, bodies: bool = True) -> str:
    lines: list[str] = []
    for entry in entries:
        lines.append(f"[{entry.get('server')}] {summary(entry)}")
        if bodies:
            lines.append("  → " + _compact(entry.get("request", {}).get("body")))
            for message in (entry.get("response") or {}).get("messages") or []:
                lines.append("  ← " + _compact(message))
    return "\n".join(lines)


def html(entries: list[dict[str, Any]], *, open_first: bool = False) -> str:
    return "".join(_exchange(e, open_=open_first and i == 0) for i, e in enumerate(entries))


def fold(entries: list[dict[str, Any]]) -> str:
    """The "wire" fold of a result view: closed, one exchange per line inside."""
    if not entries:
        body = f'<div style="color:{FG_DIM}">(the wire log is off: nothing was recorded)</div>'
    else:
        body = html(entries)
    count = f"{len(entries)} exchange{'s' if len(entries) != 1 else ''}"
    return (
        f'<details class="cireil-wire" style="margin:4px 0"><summary style="color:{FG_DIM}">wire · {count}</summary>'
        f'<div style="padding-left:8px">{body}</div></details>'
    )


def _exchange(entry: dict[str, Any], *, open_: bool) -> str:
    response = entry.get("response") or {}
    status = response.get("status")
    colour = ERROR if entry.get("error") or (status is not None and status >= 400) else OK if status else WARN
    request = entry.get("request") or {}
    parts = [
        _section("request headers", _headers(request.get("headers") or {})),
        _section("→ request", _pre(request.get("body"))),
    ]
    if status is not None:
        parts.append(_section(f"response headers · HTTP {status}", _headers(response.get("headers") or {})))
        messages = response.get("messages") or []
        label = "← SSE event" if response.get("type") == "sse" else "← response"
        parts += [_section(f"{label} {i + 1}" if len(messages) > 1 else label, _pre(m)) for i, m in enumerate(messages)]
    if entry.get("truncated"):
        parts.append(f'<div style="color:{WARN}">(cut: the log keeps the first 64 KiB of a message)</div>')
    if entry.get("error"):
        parts.append(f'<div style="color:{ERROR}">✖ {esc(entry["error"])}</div>')
    return (
        f'<details{" open" if open_ else ""} style="margin:2px 0;border-left:3px solid {colour};padding-left:6px">'
        f'<summary style="font-family:{MONO}">{esc(summary(entry))}</summary>{"".join(parts)}</details>'
    )


def _section(title: str, body: str) -> str:
    return f'<div style="color:{FG_DIM};margin-top:3px">{esc(title)}</div>{body}'


def _headers(headers: dict[str, Any]) -> str:
    rows = "".join(
        f'<tr><td style="color:{FG_DIM};padding:0 10px 0 0;vertical-align:top;text-align:left">{esc(k)}</td>'
        f'<td style="overflow-wrap:anywhere;text-align:left;padding:0">{esc(v)}</td></tr>'
        for k, v in headers.items()
    )
    return f'<table style="font-family:{MONO};font-size:90%;border-collapse:collapse"><tbody>{rows}</tbody></table>'


def _pre(value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(shown) > SHOWN_CHARS:
        shown = shown[:SHOWN_CHARS] + f"\n… ({len(shown) - SHOWN_CHARS:,} more characters in the log)"
    return (
        f'<pre style="font-family:{MONO};white-space:pre-wrap;overflow-wrap:anywhere;margin:0;'
        f'border:1px solid {BORDER};padding:2px 6px;max-height:24em;overflow:auto">{esc(shown)}</pre>'
    )


def _compact(value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return shown if len(shown) <= 300 else shown[:299] + "…"
