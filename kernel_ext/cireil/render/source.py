"""File text as HTML: line numbers, syntax highlighting by file type, Markdown also rendered.

pygments and markdown-it-py load only here, when something is displayed.
"""

from __future__ import annotations

import re

from .html import BG_SOFT, BORDER, FG_DIM, MONO, esc

HIGHLIGHT_LIMIT = 120_000  # characters; above this the text is shown plain, still numbered
_BREAK = re.compile(r"\r\n|\r|\n")


def _highlighted_lines(text: str, path: str) -> list[str]:
    lines = _BREAK.split(text)
    if len(text) > HIGHLIGHT_LIMIT:
        return [esc(line) for line in lines]
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_for_filename
        from pygments.util import ClassNotFound
    except ImportError:  # pragma: no cover - pygments comes with IPython
        return [esc(line) for line in lines]
    try:
        lexer = get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return [esc(line) for line in lines]
    # noclasses: inline styles only, nothing that could restyle the page
    out = highlight("\n".join(lines), lexer, HtmlFormatter(noclasses=True, nowrap=True, nobackground=True))
    rendered = out.split("\n")
    if len(rendered) != len(lines):  # a lexer that merged or dropped lines: numbers must stay right
        return [esc(line) for line in lines]
    return rendered


def numbered(text: str, path: str, *, first_line: int = 1) -> str:
    """A <pre> with a line-number gutter; line numbers are what an editor shows for \\n, \\r\\n and \\r."""
    lines = _highlighted_lines(text, path)
    width = len(str(first_line + len(lines) - 1))
    gutter = f'style="color:{FG_DIM};user-select:none;display:inline-block;min-width:{width}ch;text-align:right;'
    gutter += f'padding-right:8px;margin-right:8px;border-right:1px solid {BORDER}"'
    body = "\n".join(f"<span {gutter}>{first_line + i}</span>{line}" for i, line in enumerate(lines))
    return (
        f'<pre style="font-family:{MONO};background:{BG_SOFT};padding:6px;margin:4px 0;'
        f'white-space:pre;overflow:auto;max-height:40em">{body}</pre>'
    )


def markdown_html(text: str) -> str:
    """Markdown with raw HTML escaped and images as links: showing a file never fetches anything."""
    from .safe import markdown_html as safe_markdown

    return safe_markdown(text)


def is_markdown(path: str) -> bool:
    return path.lower().endswith((".md", ".markdown"))


def content_view(text: str, path: str) -> str:
    """Source with numbers; Markdown files add a rendered view, each side in its own <details>."""
    source = numbered(text, path)
    if not is_markdown(path):
        return source
    summary = f'style="cursor:pointer;color:{FG_DIM}"'
    rendered = f'<div style="padding:4px 8px;border:1px solid {BORDER}">{markdown_html(text)}</div>'
    return (
        f"<details open><summary {summary}>source</summary>{source}</details>"
        f"<details><summary {summary}>rendered</summary>{rendered}</details>"
    )


def plain_numbered(text: str, *, first_line: int = 1) -> str:
    lines = _BREAK.split(text)
    width = len(str(first_line + len(lines) - 1))
    return "\n".join(f"{first_line + i:>{width}} | {line}" for i, line in enumerate(lines))
