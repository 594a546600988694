"""Small HTML helpers shared by the renderers: escaping, theme-aware inline styles, frames.

Everything is inline-styled (no <style> element, no scripts) with JupyterLab's CSS variables and
fallbacks, so output looks right in light and dark themes and cannot restyle the page.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..runtime.base.controls import visible

FG = "var(--jp-ui-font-color1, inherit)"
FG_DIM = "var(--jp-ui-font-color2, #666)"
BORDER = "var(--jp-border-color2, #ccc)"
BG_SOFT = "var(--jp-layout-color2, rgba(127,127,127,0.08))"
ERROR = "var(--jp-error-color1, #d32f2f)"
ERROR_BG = "rgba(211,47,47,0.1)"  # a tint: --jp-error-color3 stays pale in the dark theme
WARN = "var(--jp-warn-color1, #b26a00)"
OK = "var(--jp-success-color1, #2e7d32)"
MONO = "var(--jp-code-font-family, monospace)"


def esc(value: Any) -> str:
    # control characters shown, not passed on: widget HTML (outline rows, forms, panels) does not go
    # through safe_bundle, and escaped text is where data from files, servers and models lands
    return html.escape(visible(str(value)), quote=True)


def code(value: Any, style: str = "") -> str:
    """`value` escaped, inline in the code font: a path, an id, a command in a line of text."""
    return f'<code style="font-family:{MONO}{";" + style if style else ""}">{esc(value)}</code>'


# a table cell: HTML (already escaped), or (HTML, more inline style for this one cell)
Cell = str | tuple[str, str]
CELL = "padding:2px 8px;text-align:left;vertical-align:top"  # left and top: JupyterLab right-aligns cells
LINED = f"{CELL};border-top:1px solid {BORDER}"  # rows parted by a line


# JupyterLab lays out rendered tables with `table-layout: fixed`, which sizes columns from the first row and squeezed
# a description column into ~160 px: every table of ours asks for the browser's content-sized layout instead.
TABLE_LAYOUT = "table-layout:auto"
# Text that wraps at word boundaries: JupyterLab gives an output's <pre> `word-break: break-all` ("wat/er"), and
# `overflow-wrap: anywhere` lets an auto-sized column shrink until words break. A word longer than a line still breaks.
WORD_WRAP = "white-space:pre-wrap;word-break:normal;overflow-wrap:break-word"


def table(rows: Iterable[Sequence[Cell]], *, head: Sequence[Cell] = (), cell: str = CELL, style: str = "") -> str:
    """An HTML table: every cell gets the `cell` style (plus its own), the head row if given, the table `style`.

    Columns are sized to their content (TABLE_LAYOUT), whatever the page's stylesheet says."""

    def one(tag: str, item: Cell) -> str:
        content, extra = (item, "") if isinstance(item, str) else item
        return f'<{tag} style="{cell}{";" + extra if extra else ""}">{content}</{tag}>'

    thead = f"<thead><tr>{''.join(one('th', h) for h in head)}</tr></thead>" if head else ""
    body = "".join(f"<tr>{''.join(one('td', c) for c in row)}</tr>" for row in rows)
    return f'<table style="{TABLE_LAYOUT}{";" + style if style else ""}">{thead}<tbody>{body}</tbody></table>'


def folded_text(text: str, *, more: str = "more") -> str:
    """Long prose (a tool's description) as its first paragraph, the rest folded under `more`; escaped."""
    first, sep, rest = text.strip().partition("\n\n")
    shown = f'<div style="{WORD_WRAP}">{esc(first)}</div>'
    if not sep or not rest.strip():
        return shown
    return (
        f'{shown}<details class="cireil-more"><summary style="cursor:pointer;color:{FG_DIM}">{esc(more)}</summary>'
        f'<div style="{WORD_WRAP}">{esc(rest.strip())}</div></details>'
    )


def pairs(rows: Iterable[tuple[Any, Any]], *, value_style: str = "") -> str:
    """A card of name, value rows (a session, an MCP server): names dim, values in the code font; both escaped."""
    name = f"color:{FG_DIM};padding:1px 10px 1px 0"
    value = f"font-family:{MONO}" + (f";{value_style}" if value_style else "")
    return table((((esc(k), name), (esc(v), value)) for k, v in rows), cell="text-align:left;vertical-align:top")


FRAME_INSET_PX = 13  # border-left 3px + padding-left 10px: where a frame's text starts; widgets beside it align


def frame(tool: str, body: str, *, title: str | None = None, failed: bool = False) -> str:
    border = ERROR if failed else BORDER
    head = ""
    if title is not None:
        head = f'<div style="font-weight:600;margin-bottom:4px;color:{ERROR if failed else FG}">{title}</div>'
    return (
        f'<div class="cireil cireil-{esc(tool)}" style="border-left:3px solid {border};'
        f'padding:4px 10px;margin:2px 0;color:{FG}">{head}{body}</div>'
    )


# An "i" in a drawn circle, in the text's colour: the "ⓘ" character is an empty box in many fonts, and a
# letter in a CSS circle needs no font, no image and no SVG.
INFO_ICON = (
    '<span aria-label="note" style="display:inline-block;box-sizing:border-box;width:1.2em;height:1.2em;'
    "border:1.5px solid currentColor;border-radius:50%;text-align:center;line-height:1.05em;font-size:85%;"
    'font-weight:700;font-style:normal;font-family:serif;vertical-align:0.05em">i</span>'
)


def notices_html(notices: list[str]) -> str:
    return "".join(
        f'<div class="cireil-notice" style="color:{WARN};font-size:90%;margin:2px 0">{INFO_ICON} {esc(n)}</div>'
        for n in notices
    )


def code_block(text: str) -> str:
    return (
        f'<pre style="font-family:{MONO};background:{BG_SOFT};padding:6px;margin:4px 0;{WORD_WRAP}">{esc(text)}</pre>'
    )


MAX_DEPTH = 40  # levels of nested lists/objects a view shows; deeper ones are "…" (json.dumps recursion)
DEEPER = "…"


def clip_depth(value: Any, depth: int = MAX_DEPTH) -> Any:
    """`value` with every list or object nested deeper than `depth` replaced by "…" (recursion only `depth` deep)."""
    if isinstance(value, dict):
        if depth <= 0:
            return DEEPER
        return {k: clip_depth(v, depth - 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if depth <= 0:
            return DEEPER
        return [clip_depth(v, depth - 1) for v in value]
    return value


def json_text(data: Any) -> str:
    return json.dumps(clip_depth(data), indent=2, ensure_ascii=False, default=str)
