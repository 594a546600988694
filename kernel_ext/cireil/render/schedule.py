"""schedule: the job, when it runs and where its answer goes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, OK, code, esc, frame

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult


def render(result: ToolResult) -> tuple[str, str]:
    data, args = result.data, result.args
    delivery = args.get("delivery") or "announce"
    target = args.get("target") or "current"
    where = "the answer is discarded" if delivery == "none" else f"the answer is announced to {target}"
    text = f"⏰ job {data.get('id')} at {data.get('at')}: {args.get('prompt', '')}\n  {where}"
    body = (
        f'<span style="color:{OK}">⏰</span> job {code(data.get("id"))} '
        f"at <b>{esc(data.get('at'))}</b>: {esc(args.get('prompt', ''))}"
        f'<div style="color:{FG_DIM};font-size:90%">{esc(where)}; it runs while this kernel lives, '
        "or at the next load if it came due meanwhile</div>"
    )
    return text, frame("schedule", body)
