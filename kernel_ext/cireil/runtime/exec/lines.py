"""A bounded view of a byte stream's lines: the first N, the last M, and counts of everything else.

Memory stays O((N + M) * line cap) whatever the stream's size: each kept line stores at most
`cap` bytes (enough for `maxPreviewLineLength` characters), and the lines between the head and the
tail are only counted. Work per chunk is a few C-level scans plus O(N + M) Python steps, so a
stream of millions of short lines costs no more Python than one of a few long ones.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# UTF-8 continuation bytes: every other byte starts a character, so counting them gives a character count
_CONTINUATION = bytes(range(0x80, 0xC0))


def char_count(data: bytes) -> int:
    if data.isascii():  # the common case, and far cheaper than the translate below
        return len(data)
    return len(data.translate(None, _CONTINUATION))


@dataclass
class Line:
    prefix: bytearray = field(default_factory=bytearray)  # the first `cap` bytes of the line
    size: int = 0  # bytes, without the newline
    chars: int = 0  # characters (UTF-8 lead bytes), for the elision marker

    def extend(self, data: bytes, cap: int) -> None:
        room = cap - len(self.prefix)
        if room > 0:
            self.prefix += data[:room]
        self.size += len(data)
        self.chars += char_count(data)


class LineWindow:
    """Feed bytes; ask for the kept head and tail lines and how much lies between them."""

    def __init__(self, head: int, tail: int, cap: int) -> None:
        self.head_n, self.tail_n, self.cap = head, tail, cap
        self.head: list[Line] = []
        self.tail: deque[Line] = deque(maxlen=tail) if tail > 0 else deque(maxlen=0)
        self.current = Line()
        self.completed = 0  # lines ended by a newline
        self.size = 0  # bytes fed

    def _finish(self, line: Line) -> None:
        self.completed += 1
        if len(self.head) < self.head_n:
            self.head.append(line)
        elif self.tail_n > 0:
            self.tail.append(line)

    def _whole(self, data: bytes) -> Line:
        line = Line()
        line.extend(data, self.cap)
        return line

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.size += len(chunk)
        first = chunk.find(b"\n")
        if first < 0:
            self.current.extend(chunk, self.cap)
            return
        self.current.extend(chunk[:first], self.cap)
        self._finish(self.current)
        self.current = Line()
        pos = first + 1
        newlines = chunk.count(b"\n", pos)  # lines completed inside this chunk after the first
        while newlines and len(self.head) < self.head_n:
            end = chunk.find(b"\n", pos)
            self._finish(self._whole(chunk[pos:end]))
            pos, newlines = end + 1, newlines - 1
        if newlines > self.tail_n:
            # only the last tail_n of these lines can still be shown: count the others, skip their bytes
            skip = newlines - self.tail_n
            start = len(chunk)
            for _ in range(self.tail_n + 1):
                start = chunk.rfind(b"\n", pos, start)
            pos = start + 1
            self.completed += skip
            newlines = self.tail_n
            self.tail.clear()  # everything kept before is now older than the newest tail_n lines
        while newlines:
            end = chunk.find(b"\n", pos)
            self._finish(self._whole(chunk[pos:end]))
            pos, newlines = end + 1, newlines - 1
        if pos < len(chunk):
            self.current.extend(chunk[pos:], self.cap)

    def lines(self) -> tuple[list[Line], list[Line], int, int]:
        """(head, tail, omitted line count, omitted bytes); the unterminated last line counts as a line.

        The parts are those of `text.split("\\n")`, as the reference counts them: "a\\n" is two lines.
        """
        tail = list(self.tail)
        if self.size == 0:
            return [], [], 0, 0
        last = self.current
        head = list(self.head)
        total = self.completed + 1
        if len(head) < self.head_n:
            head.append(last)
        elif self.tail_n > 0:
            tail.append(last)
            if len(tail) > self.tail_n:
                tail = tail[1:]
        shown = [*head, *tail]
        # every shown line but the stream's last carries its newline
        shown_bytes = sum(line.size + 1 for line in shown) - (1 if shown and shown[-1] is last else 0)
        omitted = total - len(shown)
        return head, tail, omitted, self.size - shown_bytes if omitted else 0
