"""XML and HTML sections: elements carrying an `id` or `name` attribute (reference §4.3).

Regular expressions are fine here: the rule is about attributes of opening tags, not a grammar.
An element's span runs to its matching closing tag when there is one.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from .model import Heading

_ATTR = re.compile(r"\s(id|name)\s*=\s*\"([^\"]*)\"")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
# HTML elements that never have a closing tag: they must not stay open on the element stack.
_VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr")
)


_TAG = re.compile(r"<(/?)([A-Za-z_][\w.:-]*)((?:\s+[^\s=>/]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?)*)\s*(/?)>")


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, ch in enumerate(text) if ch == "\n")
    return starts


def extract(lines: list[str]) -> list[Heading]:
    text = "\n".join(lines)
    # Blank out comments (same length) so commented-out elements are not sections.
    text = _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    starts = _line_starts(text)
    found: list[dict] = []
    # One pass over every tag with a stack of open elements, so closing tags are matched in linear
    # time; an element never closed (malformed, or HTML's optional end tags) spans by level instead.
    stack: list[tuple[str, int | None, int]] = []  # (tag, index into found or None, sections open)
    for match in _TAG.finditer(text):
        closing, tag, attrs, self_closing = match.groups()
        line = bisect_right(starts, match.start())
        if closing:
            depth = len(stack) - 1
            while depth >= 0 and stack[depth][0] != tag:  # usually the top: well-formed files stay linear
                depth -= 1
            if depth >= 0:
                index = stack[depth][1]
                if index is not None:
                    found[index]["end"] = line
                del stack[depth:]
            continue
        void = bool(self_closing) or tag.lower() in _VOID
        index = None
        attr = _ATTR.search(attrs)
        if attr is not None:
            key, value = attr.group(1), attr.group(2)
            level = 1 + (stack[-1][2] if stack else 0)
            label = f"{tag}#{value}" if key == "id" else tag
            index = len(found)
            found.append({"label": label, "slug": value, "line": line, "level": level, "end": line if void else None})
        if not void:
            stack.append((tag, index, (stack[-1][2] if stack else 0) + (index is not None)))
    return [Heading(f["label"], f["slug"], f["line"], f["level"], "xml-element", f["end"]) for f in found]
