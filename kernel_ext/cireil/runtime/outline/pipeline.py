"""Choosing an extractor for a file and turning its headings into the outline the agent sees.

Extractors are tried in order; the first whose glob matches the file name and that finds at least
one section wins (reference §4.3). Plugins add extractors with `register_extractor`; an extractor
that raises is logged and skipped, so a broken plugin never breaks reading.
"""

from __future__ import annotations

import logging
import math
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from . import markdown, xml
from .model import Heading, estimate_tokens, split_lines
from .slug import unique_ids

log = logging.getLogger(__name__)

OUTLINE_THRESHOLD = 2000  # tokens; an outline only for files estimated above this
# Sections nested deeper than this are left out of the outline (and said so): a 1,500-deep XML file
# would otherwise give every view a 1,500-level tree to draw. Their text stays reachable by pinning
# an enclosing section.
MAX_DEPTH = 64


@dataclass(frozen=True)
class Extractor:
    """Finds sections in the lines of a file whose name matches one of `globs`.

    A glob is `*.ext` (the name ends with `.ext`, case-sensitive) or an exact file name.
    """

    name: str
    globs: tuple[str, ...]
    extract: Callable[[list[str]], list[Heading]]
    priority: int = 0

    def matches(self, filename: str) -> bool:
        return any(filename.endswith(g[1:]) if g.startswith("*.") else filename == g for g in self.globs)


_EXTRACTORS: list[Extractor] = [
    Extractor("markdown", ("*.md",), markdown.extract),
    Extractor("xml", ("*.xml", "*.html"), xml.extract),
]


def extractors() -> list[Extractor]:
    return list(_EXTRACTORS)


def register_extractor(extractor: Extractor) -> None:
    """Insert before the first extractor of strictly lower priority (ties go after existing ones)."""
    index = next((i for i, e in enumerate(_EXTRACTORS) if e.priority < extractor.priority), len(_EXTRACTORS))
    _EXTRACTORS.insert(index, extractor)


def unregister_extractor(name: str) -> None:
    _EXTRACTORS[:] = [e for e in _EXTRACTORS if e.name != name]


def _units(line: str) -> int:
    return len(line) + (0 if line.isascii() else sum(1 for ch in line if ord(ch) > 0xFFFF))


def _sections(headings: list[Heading], total: int, lines: list[str], ascii_text: bool = False) -> list[dict]:
    headings = sorted(headings, key=lambda h: h.line)
    ids = unique_ids([h.slug for h in headings])
    # A section reaches the line before the next heading of the same or a higher level: one pass
    # with a stack of open sections keeps this linear even for thousands of nested elements.
    ends = [h.end for h in headings]
    open_: list[int] = []
    for index, heading in enumerate(headings):
        while open_ and headings[open_[-1]].level >= heading.level:
            closed = open_.pop()
            ends[closed] = heading.line - 1 if ends[closed] is None else ends[closed]
        open_.append(index)
    for index in open_:
        ends[index] = total if ends[index] is None else ends[index]
    # Token estimates per section from prefix sums of UTF-16 units (each line plus its break).
    units = map(len, lines) if ascii_text else map(_units, lines)
    prefix = list(accumulate((n + 1 for n in units), initial=0))
    out: list[dict] = []
    for heading, sid, end in zip(headings, ids, ends, strict=True):
        span = max(1, (end or heading.line) - heading.line + 1)
        last = min(heading.line - 1 + span, len(lines))
        units = max(0, prefix[last] - prefix[heading.line - 1] - 1)
        out.append(
            {
                "estTokens": math.ceil(units / 3),
                "id": sid,
                "label": heading.label,
                "line": heading.line,
                "lines": span,
                "type": heading.type,
            }
        )
    return out


def build_outline(path: str, text: str, *, force: bool = False) -> dict | None:
    """The outline object of reference §4.3, or None (small file, no extractor, no sections).

    `force` skips the size threshold (used to list what a small file would offer).
    """
    est = estimate_tokens(text)
    if est <= OUTLINE_THRESHOLD and not force:
        return None
    filename = posixpath.basename(path)
    lines: list[str] | None = None
    for extractor in _EXTRACTORS:
        if not extractor.matches(filename):
            continue
        lines = lines if lines is not None else split_lines(text)
        try:
            headings = extractor.extract(lines)
        except Exception:  # a plugin bug must not break reading; the next extractor may still work
            log.exception("outline extractor %r failed on %s", extractor.name, path)
            continue
        if headings:
            sections, dropped = _bounded(_sections(headings, len(lines), lines, text.isascii()))
            outline = {"estTokens": est, "lines": len(lines), "path": path, "sections": sections}
            if dropped:
                outline["note"] = (
                    f"{dropped} section(s) nested more than {MAX_DEPTH} levels deep are not listed; "
                    "pin an enclosing section to read them."
                )
            return outline
    return None


def _bounded(sections: list[dict]) -> tuple[list[dict], int]:
    """The sections at most MAX_DEPTH levels deep, nesting by span as the views do; and how many were left out."""
    kept: list[dict] = []
    stack: list[tuple[int, int]] = []  # (first line, last line) of the enclosing sections
    for section in sections:
        first, last = section["line"], section["line"] + section["lines"] - 1
        while stack and not (first > stack[-1][0] and last <= stack[-1][1]):
            stack.pop()
        if len(stack) < MAX_DEPTH:
            kept.append(section)
        stack.append((first, last))
    return kept, len(sections) - len(kept)


def outline_for(path: str, text: str) -> dict | None:
    return build_outline(path, text)


def find_section(outline: dict | None, section_id: str) -> dict | None:
    if outline is None:
        return None
    return next((s for s in outline["sections"] if s["id"] == section_id), None)


def section_text(text: str, section: dict) -> str:
    """The lines of one section: its heading, its children, up to the next same-or-higher heading."""
    lines = split_lines(text)
    chunk = lines[section["line"] - 1 : section["line"] - 1 + section["lines"]]
    while chunk and not chunk[-1].strip():
        chunk.pop()  # the blank lines before the next heading belong to no one in particular
    return "\n".join(chunk)
