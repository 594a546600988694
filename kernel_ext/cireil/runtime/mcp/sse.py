"""Incremental Server-Sent Events parsing (WHATWG rules: CRLF, LF or CR line ends)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class Event:
    event: str
    data: str
    id: str | None = None


class SseTooLarge(Exception):
    """One event (its data so far and the line in progress) passed the parser's limit."""

    def __init__(self, pending: str) -> None:
        super().__init__(f"an event of more than {len(pending)} characters")
        self.pending = pending


class SseParser:
    """Feed decoded text as it arrives; complete events come out. Comments (keepalives) are dropped here.

    `limit` bounds one event (data and the line in progress, in characters): past it `feed` raises
    SseTooLarge, so a server cannot grow one event without end. Events before it are not counted.

    Linear in the text fed, however it is cut: a line that arrives in many pieces is kept as the list of its
    pieces and joined once, when its end comes, and each piece is searched for a line end once.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._size = 0  # characters of data in the event being read
        self._pieces: list[str] = []  # the line in progress (no line end in it, bar a CR at the very end)
        self._held = 0  # characters in _pieces
        # texts fed and not yet read through, each with where reading stands: a caller may stop at any event
        self._queue: deque[tuple[str, int]] = deque()
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self.retry_ms: int | None = None
        self.last_id: str | None = None

    def feed(self, text: str) -> Iterator[Event]:
        if text:
            self._queue.append((text, 0))
        while self._queue:
            rest, start = self._queue[0]
            yield from self._scan(rest, start)
            self._queue.popleft()

    def _scan(self, text: str, start: int) -> Iterator[Event]:
        if self._pieces and self._pieces[-1].endswith("\r"):  # a CR held back: a line end after all
            line = "".join(self._pieces)[:-1]
            self._pieces, self._held = [], 0
            if text.startswith("\n", start):
                start += 1
            event = self._line(line)
            if event is not None:
                self._queue[0] = (text, start)  # consistent should the caller stop here
                yield event
        n = len(text)
        lf = cr = -2  # where the next LF and CR are from `start` (-1: none): each is searched for once
        while True:
            if lf != -1 and lf < start:
                lf = text.find("\n", start)
            if cr != -1 and cr < start:
                cr = text.find("\r", start)
            if cr == -1 or (lf != -1 and lf < cr):
                end, skip = (lf, 1) if lf != -1 else (-1, 0)
            elif cr + 1 == n:
                end, skip = -1, 0  # a lone CR at the end may be the first half of CRLF: wait for more
            else:
                end, skip = cr, 2 if text[cr + 1] == "\n" else 1
            if end == -1:
                self._queue[0] = (text, n)
                if start < n:
                    self._pieces.append(text[start:] if start else text)
                    self._held += n - start
                if self.limit is not None and self._size + self._held > self.limit:
                    raise SseTooLarge(self._pending())
                return
            if self._pieces:
                self._pieces.append(text[start:end])
                line = "".join(self._pieces)
                self._pieces, self._held = [], 0
            else:
                line = text[start:end]
            start = end + skip
            event = self._line(line)
            if event is not None:
                self._queue[0] = (text, start)  # consistent should the caller stop here
                yield event

    def finish(self) -> Iterator[Event]:
        """At the end of the stream: a CR held back as a possible half of CRLF was a line end after all."""
        if self._pieces and self._pieces[-1].endswith("\r"):
            yield from self.feed("\n")

    def _pending(self) -> str:
        """The event read so far as its data would be: what a spill keeps of it."""
        line = "".join(self._pieces)
        if line.startswith("data:"):
            line = line[6:] if line.startswith("data: ") else line[5:]
        return "\n".join([*self._data, line]) if self._data else line

    def _line(self, line: str) -> Event | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value)
            if self.limit is not None and self._size > self.limit:  # many short lines make one event too
                raise SseTooLarge(self._pending())
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> Event | None:
        data, event, ident = "\n".join(self._data), self._event or "message", self._id
        self._data, self._event, self._id, self._size = [], "", None, 0
        if ident is not None:
            self.last_id = ident
        if not data:
            return None  # a priming event (an id with empty data) carries no message
        return Event(event, data, ident)
