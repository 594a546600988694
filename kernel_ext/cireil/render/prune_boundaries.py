"""prune-boundaries: which topic was compacted, and how many messages it replaces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, MONO, OK, esc, frame

if TYPE_CHECKING:
    from ..runtime.result import ToolResult


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
        f'<span style="color:{FG_DIM}">from</span> <code style="font-family:{MONO}">{esc(start)}</code> '
        f'<span style="color:{FG_DIM}">to</span> <code style="font-family:{MONO}">{esc(end)}</code> '
        f"→ {esc(data.get('identifier', ''))} "
        f'<span style="color:{FG_DIM}">(<code style="font-family:{MONO}">{esc(data.get("slug", ""))}</code>)</span>'
    )
    return text, frame("prune-boundaries", body, title="✂ topic summary")
