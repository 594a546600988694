"""`%cireil prompt`: the next model request, part by part, each part folded.

It shows what is sent, not a summary of it: the system prompt, every message with its role, each
tool schema, the URL and headers (every API key or OAuth token replaced by where it comes from: the
view never reads a secret), and the JSON body exactly as the provider would POST it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .html import BORDER, FG_DIM, MONO, code_block, esc, frame

if TYPE_CHECKING:
    from ..runtime.engine.runner import PreparedRequest


def _message_text(message: dict) -> str:
    role = message.get("role")
    if role == "toolResponse":
        return json.dumps(message.get("output"), indent=2, ensure_ascii=False, default=str)
    content = message.get("content")
    if isinstance(content, str):
        return content
    out = []
    for part in content or ():
        kind = part.get("type")
        if kind == "text":
            out.append(part.get("text", ""))
        elif kind == "toolCall":
            out.append(f"[call {part['name']}] {json.dumps(part.get('input') or {}, ensure_ascii=False)}")
        elif kind == "thinking":
            out.append(f"[thinking] {part.get('thinking', '')}")
        elif kind in ("image", "video"):
            out.append(f"[{kind} {part.get('mediaType', '')}, {len(part.get('data', '')) * 3 // 4:,} bytes]")
    return "\n".join(out)


def _label(message: dict) -> str:
    role = message.get("role", "?")
    if role == "toolResponse":
        return f"tool result · {message.get('name', '?')}"
    return role


def _snippet(message: dict, limit: int = 80) -> str:
    """The first line of a message, so the folded list can be read without opening each one."""
    if message.get("role") == "toolResponse":  # one compact line instead of the indented JSON's "{"
        lines = [json.dumps(message.get("output"), ensure_ascii=False, default=str)]
    else:
        lines = _message_text(message).strip().splitlines()
    first = lines[0] if lines else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _details(summary: str, body: str, *, open_: bool = False) -> str:
    return (
        f'<details{" open" if open_ else ""} style="margin:3px 0;border-left:2px solid {BORDER};padding-left:6px">'
        f'<summary style="cursor:pointer">{summary}</summary>{body}</details>'
    )


def _header_text(headers: list[tuple[str, str]]) -> str:
    return "\n".join(f"{name}: {value}" for name, value in headers)


@dataclass
class PromptView:
    prepared: PreparedRequest

    @property
    def _request(self) -> Any:
        return self.prepared.model_request

    def text(self) -> str:
        r = self._request
        lines = [
            f"next request: model {r.model}, session {r.session_id}, ~{self.prepared.estimate:,} tokens"
            " (cireil's estimate: system prompt and messages, ~3 characters a token; the turn footer shows the"
            " provider's own count)",
            f"system prompt: {len(r.system):,} characters",
            f"messages: {len(r.messages)}",
        ]
        for m in r.messages:
            first = _message_text(m).strip().splitlines()[:1]
            lines.append(f"  {_label(m)}: {first[0][:100] if first else ''}")
        lines.append(f"tools: {', '.join(t['name'] for t in r.tools) or 'none'}")
        lines.append(f"POST {self.prepared.url}")
        lines += [f"  {line}" for line in _header_text(self.prepared.headers).splitlines()]
        return "\n".join(lines)

    def html(self) -> str:
        r = self._request
        head = (
            f'<div style="color:{FG_DIM};font-size:90%">model <b>{esc(r.model)}</b> · session '
            f'<span style="font-family:{MONO}">{esc(r.session_id)}</span> · ~{self.prepared.estimate:,} tokens '
            "(cireil's estimate of the system prompt and messages, ~3 characters a token, as pruning counts them; "
            "a turn's footer shows the same estimate beside the provider's own count)</div>"
        )
        parts = [_details(f"system prompt ({len(r.system):,} characters)", code_block(r.system))]
        rows = "".join(
            _details(
                f"{i + 1}. {esc(_label(m))} "
                f'<span style="color:{FG_DIM};font-family:{MONO};font-size:90%">{esc(_snippet(m))}</span>',
                code_block(_message_text(m)),
            )
            for i, m in enumerate(r.messages)
        )
        parts.append(_details(f"messages ({len(r.messages)})", rows, open_=True))
        tools = "".join(
            _details(
                f'<span style="font-family:{MONO}">{esc(t["name"])}</span>',
                code_block(json.dumps(t, indent=2, ensure_ascii=False)),
            )
            for t in r.tools
        )
        parts.append(_details(f"tools ({len(r.tools)})", tools))
        parts.append(
            _details(f"headers · POST {esc(self.prepared.url)}", code_block(_header_text(self.prepared.headers)))
        )
        body = json.dumps(self.prepared.body, indent=2, ensure_ascii=False, default=str)
        parts.append(_details(f"request body as POSTed ({len(body):,} characters)", code_block(body)))
        return frame("prompt", head + "".join(parts), title="next model request")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from .safe import safe_bundle

        return safe_bundle({"text/plain": self.text(), "text/html": self.html()})

    def __repr__(self) -> str:
        return self.text()
