"""query-sessions as a list of hits: where, who, when, and the message text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import BORDER, FG_DIM, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult

PREVIEW = 500  # characters of a hit shown here; the result itself keeps the whole text


def _short(text: str) -> str:
    return text if len(text) <= PREVIEW else text[:PREVIEW] + "…"


def _hit(m: dict) -> str:
    where = f"{code(m.get('sessionId', ''))} · {esc(m.get('role', ''))} · {esc(m.get('timestamp', ''))}"
    text = esc(_short(str(m.get("content", ""))))
    return (
        f'<div style="border-top:1px solid {BORDER};padding:3px 0">'
        f'<div style="color:{FG_DIM};font-size:90%">{where}</div>'
        f'<div style="white-space:pre-wrap;overflow-wrap:anywhere">{text}</div></div>'
    )


def render(result: ToolResult) -> tuple[str, str]:
    matches = result.data.get("matches", [])
    total = result.data.get("totalMatches", len(matches))
    query = result.args.get("query", "")
    mode = result.args.get("mode", "glob")
    summary = f"{len(matches)} of {total} match{'' if total == 1 else 'es'}"
    lines = [f"{query!r} ({mode}): {summary}"]
    note = result.data.get("note")  # the index is still being built: said, as the model is told
    if note:
        lines.append(note)
    for m in matches:
        lines.append(f"{m.get('sessionId')} · {m.get('role')} · {m.get('timestamp', '')}")
        lines += ["  " + line for line in _short(str(m.get("content", ""))).splitlines() or [""]]
    items = "".join(_hit(m) for m in matches) or f'<div style="color:{FG_DIM}">(no matches)</div>'
    if note:
        items = f'<div style="color:{FG_DIM}">{esc(note)}</div>' + items
    title = f'🔎 {code(query)} <span style="color:{FG_DIM}">({esc(mode)}) · {esc(summary)}</span>'
    return "\n".join(lines), frame("query-sessions", items, title=title)
