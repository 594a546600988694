"""session-info as a small card."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, MONO, esc, frame

if TYPE_CHECKING:
    from ..runtime.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    fields = {k: v for k, v in result.data.items() if k != "success"}
    text = "session\n" + "\n".join(f"  {k}: {v}" for k, v in fields.items())
    rows = "".join(
        f'<tr><td style="color:{FG_DIM};padding:1px 10px 1px 0;text-align:left">{esc(k)}</td>'
        f'<td style="font-family:{MONO};text-align:left">{esc(v)}</td></tr>'
        for k, v in fields.items()
    )
    return text, frame("session-info", f"<table><tbody>{rows}</tbody></table>", title="🗂 session")
