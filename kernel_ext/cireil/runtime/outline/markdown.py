"""Markdown sections from markdown-it-py's block tokens, never from regular expressions.

What counts as a section (spec and issue 3): top-level ATX headings; Setext headings only when the
file has no ATX heading; nothing inside code fences, HTML blocks, blockquotes or list items; no
heading made out of YAML (`---`) or TOML (`+++`) front matter. Labels keep link labels and drop
link destinations and other markup.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from .model import Heading
from .slug import to_slug

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_FRONT_MATTER = ("---", "+++")


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt  # lazy: only computing an outline needs it

    md = MarkdownIt("commonmark")
    # Only headings need inline parsing; skipping it for every paragraph keeps an outline cheaper
    # than a full parse of the same text (bench/outline.py).
    md.disable("inline")
    return md


@cache
def _inline_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")  # with inline parsing: heading labels only


def front_matter_end(lines: list[str]) -> int:
    """Number of leading lines that are YAML/TOML front matter (0 when there is none)."""
    if not lines or lines[0].rstrip() not in _FRONT_MATTER:
        return 0
    delimiter = lines[0].rstrip()
    for index in range(1, len(lines)):
        if lines[index].rstrip() == delimiter:
            return index + 1
    return 0


def _label(content: str, env: dict) -> str:
    """Plain text of a heading: link labels and image alt texts kept, destinations and markup gone."""
    if not any(ch in content for ch in "[]`*_<&\\!"):
        return content.strip()
    parts: list[str] = []

    def walk(tokens: list[Token]) -> None:
        for token in tokens:
            if token.type in ("text", "code_inline"):
                parts.append(token.content)
            elif token.type in ("softbreak", "hardbreak"):
                parts.append(" ")
            elif token.children:
                walk(token.children)  # image: its alt text

    # env carries the link reference definitions the block pass found: `[label][ref]` keeps `label`
    for block in _inline_parser().parseInline(content, env):
        walk(block.children or [])
    return "".join(parts).strip()


def extract(lines: list[str]) -> list[Heading]:
    skip = front_matter_end(lines)
    # Blank lines in place of the front matter keep every later line number where it was.
    source = "\n".join([""] * skip + lines[skip:]) if skip else "\n".join(lines)
    env: dict = {}
    tokens = _parser().parse(source, env)
    atx: list[Heading] = []
    setext: list[Heading] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.level != 0 or token.map is None:
            continue
        label = _label(tokens[index + 1].content, env)
        heading = Heading(label, to_slug(label), token.map[0] + 1, int(token.tag[1]), token.tag)
        (atx if token.markup.startswith("#") else setext).append(heading)
    return atx or setext
