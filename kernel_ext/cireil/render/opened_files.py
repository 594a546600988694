"""What the agent sees of its opened files (`%cireil context`, `agent.context()`), and which tools it is offered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .html import FG_DIM, WARN, code, code_block, esc, frame

if TYPE_CHECKING:
    from ..runtime.engine.opened_files import OpenedFilesContext


def render(ctx: OpenedFilesContext) -> tuple[str, str]:
    text, body = _files(ctx)
    if ctx.tools:  # the session's grant: part of what the agent sees, since it decides the tools offered
        line = f"tools: {ctx.tools}"
        text, body = f"{line}\n{text}", f'<div style="color:{FG_DIM}">{esc(line)}</div>{body}'
    return text, frame("context", body, title="what the agent sees")


def _files(ctx: OpenedFilesContext) -> tuple[str, str]:
    notes = [f"note: {n}" for n in ctx.notes]
    stale = [
        f"stale: {f['path']} pins {', '.join(f['missing'])}, not in its outline" for f in ctx.files if f["missing"]
    ]
    if not ctx.text:
        text = "\n".join([*notes, "(no files are open: the agent's context has no opened-files message)"])
        return text, f'<div style="color:{FG_DIM}">{esc(text)}</div>'
    summary = []
    for f in ctx.files:
        what = "whole file" if not f["sections"] else f"sections {', '.join(f['sections'])}"
        summary.append(f"{code(f['path'])} · {f['size']} bytes · {esc(what)}")
    warn = "".join(f'<div style="color:{WARN}">⚠ {esc(line)}</div>' for line in [*notes, *stale])
    body = "<div>" + "<br>".join(summary) + "</div>" + warn + code_block(ctx.text)
    return "\n".join([*notes, *stale, ctx.text]), body


def context_bundle(ctx: OpenedFilesContext) -> dict:
    """The MIME bundle of the opened-files context: text/plain and scoped HTML."""
    from .safe import safe_bundle

    text, body = render(ctx)
    return safe_bundle({"text/plain": text, "text/html": body})
