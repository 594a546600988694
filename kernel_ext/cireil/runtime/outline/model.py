"""The pieces an extractor returns and the measures every outline shares."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# The line breaks markdown-it (and editors) count: `str.splitlines()` would also split on U+2028,
# form feeds and \x85, shifting every line number after one of them.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    return _LINE_BREAK.split(text) if "\r" in text else text.split("\n")


def estimate_tokens(text: str) -> int:
    """ceil(length / 3) with the length in UTF-16 code units, as the upstream runtime measures it."""
    units = len(text)
    if not text.isascii():
        units += sum(1 for ch in text if ord(ch) > 0xFFFF)  # astral characters are surrogate pairs
    return math.ceil(units / 3)


@dataclass(frozen=True)
class Heading:
    """One section as an extractor finds it. `line` is 1-based; `level` orders the nesting.

    `end` (last line, inclusive) is given by extractors that know where an element closes; when it
    is None the span runs until the next heading of the same or a higher level (spec).
    """

    label: str
    slug: str
    line: int
    level: int
    type: str
    end: int | None = None
