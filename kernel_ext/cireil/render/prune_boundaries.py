"""prune-boundaries: which topic was compacted, and how many messages it replaces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, OK, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    count = data.get("messagesCompacted", 0)
    text = (
        f"compacted {count} message{'' if count == 1 else 's'} into topic {data.get('identifier', '')!r}"
        f" (slug {data.get('slug', '')})"
    )
    start, end = result.args.get("start", ""), result.args.get("end", "")
    body = (
        f'<span style="color:{OK}">✓</span> {esc(count)} message{"" if count == 1 else "s"} '
        f'<span style="color:{FG_DIM}">from</span> {code(start)} '
        f'<span style="color:{FG_DIM}">to</span> {code(end)} '
        f"→ {esc(data.get('identifier', ''))} "
        f'<span style="color:{FG_DIM}">({code(data.get("slug", ""))})</span>'
    )
    return text, frame("prune-boundaries", body, title="✂ topic summary")
