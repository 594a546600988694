"""XML and HTML sections: elements carrying an `id` or `name` attribute (reference §4.3).

Tags are read by a small scanner, not a regular expression: a regex with optional, repeatable
attribute groups backtracks exponentially on a tag that never closes (a 7 KB file with 23
attributes and no `>` took seconds per attribute added). The scanner reads each tag left to right
once; where a tag turns out not to be one, the attribute boundaries it reached are remembered as
dead ends, so a hostile file costs time in proportion to its length. An element's span runs to its
matching closing tag when there is one.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from .model import Heading

# HTML elements that never have a closing tag: they must not stay open on the element stack.
_VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr")
)
_NAME = re.compile(r"<(/?)([A-Za-z_][\w.:-]*)")
_SPACE = re.compile(r"\s*")
_ATTR_NAME = re.compile(r"[^\s=>/]+")
_UNQUOTED = re.compile(r"[^\s>]+")


class _Attrs:
    """Reads the attributes of tags in one text; dead ends are shared by every tag of the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.dead: set[int] = set()  # attribute boundaries from which no tag can be completed

    def read(self, pos: int) -> tuple[int, bool, list[tuple[str, str | None]]] | None:
        """From just after a tag name: (end after `>`, self-closing, attributes) or None (not a tag)."""
        text, dead = self.text, self.dead
        attrs: list[tuple[str, str | None]] = []
        visited: list[int] = []
        while True:
            if pos in dead:
                break
            visited.append(pos)
            gap = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if text.startswith("/>", gap):
                return gap + 2, True, attrs
            if text.startswith(">", gap):
                return gap + 1, False, attrs
            name = _ATTR_NAME.match(text, gap)
            if gap == pos or name is None:  # attributes are separated by whitespace
                break
            after = _SPACE.match(text, name.end()).end()  # type: ignore[union-attr]
            if not text.startswith("=", after):
                attrs.append((name.group(), None))
                pos = name.end()
                continue
            start = _SPACE.match(text, after + 1).end()  # type: ignore[union-attr]
            value, pos = self._value(start)
            if value is None:
                break
            attrs.append((name.group(), value))
        dead.update(visited)
        return None

    def _value(self, start: int) -> tuple[str | None, int]:
        """A quoted value (preferred when it is followed by something a tag can go on with) or a bare one."""
        text = self.text
        quote = text[start : start + 1]
        if quote in ('"', "'"):
            close = text.find(quote, start + 1)
            if close >= 0:
                nxt = text[close + 1 : close + 2]
                if nxt in (">", "/") or nxt.isspace():
                    return text[start : close + 1], close + 1  # quotes kept: only "…" makes a section
        bare = _UNQUOTED.match(text, start)
        if bare is None:
            return None, start
        return "=" + bare.group(), bare.end()  # marked bare, even when it starts with a quote


def _blank_comments(text: str) -> str:
    """Comments blanked out (same length, line breaks kept) so commented-out elements are not sections."""
    out: list[str] = []
    pos = 0
    while True:
        start = text.find("<!--", pos)
        if start < 0:
            break
        end = text.find("-->", start + 4)
        if end < 0:  # never closed: not a comment (and no later one can close either)
            break
        out += [text[pos:start], re.sub(r"[^\n]", " ", text[start : end + 3])]
        pos = end + 3
    out.append(text[pos:])
    return "".join(out)


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _section_attr(attrs: list[tuple[str, str | None]]) -> tuple[str, str] | None:
    """The first `id` or `name` attribute with a double-quoted value (as upstream: `id='x'` and `id=x`
    make no section)."""
    for key, value in attrs:
        if key in ("id", "name") and value is not None and value.startswith('"'):
            return key, value[1:-1]
    return None


def extract(lines: list[str]) -> list[Heading]:
    text = _blank_comments("\n".join(lines))
    starts = _line_starts(text)
    reader = _Attrs(text)
    found: list[dict] = []
    # One pass over every tag with a stack of open elements, so closing tags are matched in linear
    # time; an element never closed (malformed, or HTML's optional end tags) spans by level instead.
    stack: list[tuple[str, int | None, int]] = []  # (tag, index into found or None, sections open)
    open_at: dict[str, list[int]] = {}  # tag -> stack depths where it is open, for closing tags
    pos = 0
    last_gt = text.rfind(">")
    while True:
        lt = text.find("<", pos)
        if lt < 0 or lt > last_gt:  # no `>` left: nothing further can be a tag
            break
        head = _NAME.match(text, lt)
        parsed = reader.read(head.end()) if head is not None else None
        if head is None or parsed is None:
            pos = lt + 1
            continue
        end, self_closing, attrs = parsed
        pos = end
        closing, tag = head.group(1), head.group(2)
        line = bisect_right(starts, lt)
        if closing:
            depths = open_at.get(tag)
            if depths:
                depth = depths[-1]
                index = stack[depth][1]
                if index is not None:
                    found[index]["end"] = line
                for closed, _i, _n in stack[depth:]:
                    open_at[closed].pop()
                del stack[depth:]
            continue
        void = self_closing or tag.lower() in _VOID
        index = None
        attr = _section_attr(attrs)
        if attr is not None:
            key, value = attr
            level = 1 + (stack[-1][2] if stack else 0)
            label = f"{tag}#{value}" if key == "id" else tag
            index = len(found)
            found.append({"label": label, "slug": value, "line": line, "level": level, "end": line if void else None})
        if not void:
            open_at.setdefault(tag, []).append(len(stack))
            stack.append((tag, index, (stack[-1][2] if stack else 0) + (index is not None)))
    return [Heading(f["label"], f["slug"], f["line"], f["level"], "xml-element", f["end"]) for f in found]
