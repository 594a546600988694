"""Line arithmetic over a text whose offsets are str indices: line starts, line of an offset, line counts."""

from __future__ import annotations

from bisect import bisect_right
from functools import cached_property
from itertools import accumulate


class Lines:
    """Line arithmetic over one text. Line starts are only listed when a caller needs lines by number
    (near windows, error context): a successful edit on a big file needs a few counts, not a list."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._counted = 0

    @cached_property
    def starts(self) -> list[int]:
        return list(accumulate((len(part) + 1 for part in self.text.split("\n")[:-1]), initial=0))

    @cached_property
    def count(self) -> int:
        """Number of `\n`-separated parts (a final newline yields an empty last part, as the reference counts)."""
        return self.text.count("\n") + 1

    def line_of(self, offset: int) -> int:
        """1-based line holding `offset`."""
        self._counted += 1
        if "starts" in self.__dict__ or self._counted > 8:  # many lookups: listing the starts pays off
            return bisect_right(self.starts, offset)
        return self.text.count("\n", 0, offset) + 1

    def start(self, line: int) -> int:
        return self.starts[line - 1]

    def end(self, line: int) -> int:
        """Offset just past the line's newline (or the end of text on the last line)."""
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def content(self, line: int) -> str:
        """The line without its `\\n` or `\\r\\n`."""
        text = self.text[self.start(line) : self.end(line)]
        if text.endswith("\n"):
            text = text[:-1]
        return text[:-1] if text.endswith("\r") else text


def snippet_lines(text: str) -> int:
    """Line count of a snippet (reference §4.10): 0 if empty, else parts minus one if it ends with a newline."""
    if not text:
        return 0
    parts = text.count("\n") + 1
    return parts - 1 if text.endswith("\n") else parts


def uses_crlf(text: str) -> bool:
    """Whether most line endings are `\\r\\n`; ties keep `\\n`."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf * 2 > text.count("\n")


def to_eol(text: str, crlf: bool) -> str:
    """Give `text` the file's line endings, whatever mix it arrived with."""
    plain = text.replace("\r\n", "\n")
    return plain.replace("\n", "\r\n") if crlf else plain
