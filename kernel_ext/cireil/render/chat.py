"""Chat pieces of an agent turn: message bubbles, tool-call headers, the turn's footer.

Markdown goes through `safe.markdown_html`: raw HTML off, so whatever a model writes is shown as
text, never as markup (a `<script>` in a reply is escaped like any other text), and images are
links, never fetched: showing a reply cannot send anything to a server.
"""

from __future__ import annotations

import base64
import mimetypes
import re
from typing import Any

from .html import BG_SOFT, BORDER, FG, FG_DIM, INFO_ICON, MONO, WARN, esc
from .safe import markdown_html, safe_bundle

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")
INLINE_IMAGE_LIMIT = 2 * 1024 * 1024  # bigger attachments are listed, not embedded into the notebook


def as_bundle(pair: tuple[str, str]) -> dict[str, str]:
    """A (text, html) pair of this module as a MIME bundle to display."""
    return safe_bundle({"text/plain": pair[0], "text/html": pair[1]})


def _bubble(who: str, body: str, *, mine: bool, extra: str = "") -> str:
    side = "margin-left:auto" if mine else "margin-right:auto"
    tint = "rgba(33,150,243,0.10)" if mine else BG_SOFT
    return (
        f'<div class="cireil cireil-chat" style="display:flex;margin:6px 0">'
        f'<div style="{side};max-width:85%;background:{tint};border:1px solid {BORDER};border-radius:10px;'
        f'padding:6px 12px;color:{FG}">'
        f'<div style="font-size:85%;color:{FG_DIM};margin-bottom:2px">{esc(who)}</div>{body}{extra}</div></div>'
    )


def _reactions(reactions: list[str]) -> str:
    if not reactions:
        return ""
    chips = "".join(
        f'<span style="border:1px solid {BORDER};border-radius:10px;padding:0 6px;margin-right:4px">{esc(r)}</span>'
        for r in reactions
    )
    return f'<div class="cireil-reactions" style="margin-top:4px">{chips}</div>'


def user_bubble(message: dict, *, label: str = "you") -> tuple[str, str]:
    # the runtime's note listing the attachments is for the model; the person sees the 📎 line instead
    parts = message.get("content", ())
    text = "\n".join(p.get("text", "") for p in parts if p.get("type") == "text" and not p.get("note"))
    files = [a.get("filename", "?") for a in message.get("attachments", ())]
    extra = ""
    if files:
        extra = f'<div style="font-size:85%;color:{FG_DIM}">📎 {esc(", ".join(files))}</div>'
    extra += _reactions(message.get("reactions", []))
    extra += images_html(parts)
    plain = f"{label}: {text}" + (f"\n  attached: {', '.join(files)}" if files else "")
    if message.get("reactions"):
        plain += f"\n  reactions: {' '.join(message['reactions'])}"
    return plain, _bubble(label, markdown_html(text), mine=True, extra=extra)


def images_html(parts: Any) -> str:
    """Pictures a message carries (a stored image_ref is loaded with its bytes), inline up to the size limit."""
    out = []
    for part in parts or ():
        if part.get("type") != "image" or not isinstance(part.get("data"), str) or not _BASE64.match(part["data"]):
            continue
        kind = str(part.get("mediaType") or "")
        if not kind.startswith("image/") or len(part["data"]) * 3 // 4 > INLINE_IMAGE_LIMIT:
            out.append(f'<div style="font-size:85%;color:{FG_DIM}">[image {esc(kind)}]</div>')
            continue
        out.append(
            f'<div><img alt="image" src="data:{esc(kind)};base64,{esc(part["data"])}" '
            f'style="max-width:100%;max-height:320px;margin-top:4px"></div>'
        )
    return "".join(out)


def _attachment_html(path: str, picture: bytes | str | None) -> str:
    """A picture's bytes (read by the caller through the sandbox) inline; else the path, with why it is not shown."""
    kind = mimetypes.guess_type(path)[0] or ""
    if isinstance(picture, bytes) and kind.startswith("image/") and len(picture) <= INLINE_IMAGE_LIMIT:
        data = base64.b64encode(picture).decode("ascii")
        return (
            f'<div><img alt="{esc(path)}" src="data:{esc(kind)};base64,{data}" '
            f'style="max-width:100%;max-height:320px;margin-top:4px"></div>'
        )
    why = f" (not shown: {esc(picture)})" if isinstance(picture, str) else ""
    return f'<div style="font-size:85%;font-family:{MONO}">📎 {esc(path)}{why}</div>'


def agent_bubble(
    content: str,
    *,
    agent: str,
    # (sandbox path, its bytes when it is a picture to show | why it is not shown | None: listed only)
    attachments: list[tuple[str, bytes | str | None]] = (),  # type: ignore[assignment]
    final: bool = True,
    to: str | None = None,
    streaming: bool = False,
) -> tuple[str, str]:
    label = agent if to is None else f"{agent} → {to}"
    if not final:
        label += " (update)"
    if streaming:
        label += " …"
    extra = "".join(_attachment_html(p, h) for p, h in attachments)
    plain = f"{label}: {content}" + "".join(f"\n  attached: {p}" for p, _ in attachments)
    return plain, _bubble(label, markdown_html(content), mine=False, extra=extra)


def tool_header(call: dict, *, edited: bool = False) -> tuple[str, str]:
    """One line naming a call the agent makes and its arguments; `edited`: the person changed them in step mode,
    and `call` holds the ones it ran with."""
    from .html import json_text

    args = call.get("input") or {}
    short = json_text(args).replace("\n", " ")
    if len(short) > 300:
        short = short[:297] + "…"
    mark = " (edited)" if edited else ""
    plain = f"→ {call['name']}{mark} {short}"
    html = (
        f'<div class="cireil cireil-call" style="font-family:{MONO};font-size:90%;color:{FG_DIM};margin:6px 0 0">'
        f'→ <b style="color:{FG}">{esc(call["name"])}</b>{esc(mark)} {esc(short)}</div>'
    )
    return plain, html


def thinking_block(text: str) -> tuple[str, str]:
    html = (
        f'<details class="cireil cireil-thinking" style="color:{FG_DIM};font-size:90%;margin:4px 0">'
        f"<summary>thinking ({len(text):,} characters)</summary>"
        f'<div style="white-space:pre-wrap">{esc(text)}</div></details>'
    )
    return f"(thinking: {len(text):,} characters)", html


def notice_line(text: str) -> tuple[str, str]:
    return (
        f"note: {text}",
        f'<div class="cireil-notice" style="color:{WARN};font-size:90%;margin:4px 0">{INFO_ICON} {esc(text)}</div>',
    )


def footer(
    outcome: Any, seconds: float, *, estimate: int | None = None, last_usage: dict | None = None
) -> tuple[str, str]:
    """How the turn ended, then its tokens, one labelled line each: the last request as cireil estimated it
    (the number `%cireil prompt` shows, computed the same way) and as the provider counted it, then the turn's
    total as the provider counted it over all its model calls. The two counts of the last request measure
    different things (cireil's leaves out the tool definitions, which often make most of a request), so each
    line says what it counts instead of setting two bare numbers side by side."""
    usage = outcome.usage or {}
    last_usage = last_usage or {}
    calls = f"{outcome.steps} model call{'s' if outcome.steps != 1 else ''}"
    ended = {
        "respond": "turn ended with a final respond",
        "no-response": "turn ended without a message (no-response)",
        "interrupted": "turn interrupted",
        "error": "turn failed",
    }.get(outcome.ended, outcome.ended)
    rows: list[tuple[str, str]] = []
    last = []
    if estimate is not None:
        last.append(f"~{estimate:,} tokens by cireil's estimate (system prompt and messages, no tool definitions)")
    if "prompt_tokens" in last_usage:
        last.append(f"{last_usage['prompt_tokens']:,} prompt tokens by the provider's count (all it was sent)")
    if last:
        rows.append(("last request", " · ".join(last)))
    if usage:
        kinds = (("prompt_tokens", "prompt"), ("completion_tokens", "completion"))
        parts = [f"{usage[k]:,} {label}" for k, label in kinds if k in usage]
        total = f"{usage['total_tokens']:,} tokens" if "total_tokens" in usage else " + ".join(parts)
        detail = f" ({' + '.join(parts)})" if "total_tokens" in usage and parts else ""
        rows.append(("turn total", f"{total}{detail} over {calls}, by the provider's count"))
    else:
        rows.append(("turn total", "the provider reported no token counts"))
    head = f"{ended} · {calls} · {seconds:.1f} s"
    text = "\n".join([head, *(f"{label}: {value}" for label, value in rows)])
    if outcome.error:
        text += f"\nerror: {outcome.error}"
    color = WARN if outcome.ended in ("interrupted", "error") else FG_DIM
    lines = "".join(
        f'<div class="cireil-turn-tokens"><span style="font-weight:600">{esc(label)}:</span> {esc(value)}</div>'
        for label, value in rows
    )
    error = f'<div style="white-space:pre-wrap">error: {esc(outcome.error)}</div>' if outcome.error else ""
    html = (
        f'<div class="cireil cireil-turn-end" style="color:{color};font-size:85%;margin:6px 0;'
        f'border-top:1px solid {BORDER};padding-top:4px"><div>{esc(head)}</div>{lines}{error}</div>'
    )
    return text, html
