"""Incremental Server-Sent Events parsing (WHATWG rules: CRLF, LF or CR line ends)."""

from __future__ import annotations

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
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self._size = 0  # characters of data in the event being read
        self._buffer = ""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self.retry_ms: int | None = None
        self.last_id: str | None = None

    def feed(self, text: str) -> Iterator[Event]:
        buffer = self._buffer + text if self._buffer else text
        start = 0
        while True:
            cut = _line_end(buffer, start)
            if cut is None:
                self._buffer = buffer[start:]
                if self.limit is not None and self._size + len(self._buffer) > self.limit:
                    raise SseTooLarge(self._pending())
                return
            end, skip = cut
            line = buffer[start:end]
            start = end + skip  # the buffer is cut once per event, not once per line
            event = self._line(line)
            if event is not None:
                self._buffer = buffer[start:]  # consistent should the caller stop here
                yield event

    def finish(self) -> Iterator[Event]:
        """At the end of the stream: a CR held back as a possible half of CRLF was a line end after all."""
        if self._buffer.endswith("\r"):
            yield from self.feed("\n")

    def _pending(self) -> str:
        """The event read so far as its data would be: what a spill keeps of it."""
        line = self._buffer
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


def _line_end(buffer: str, start: int = 0) -> tuple[int, int] | None:
    """Where the first complete line from `start` ends and how long its terminator is."""
    lf, cr = buffer.find("\n", start), buffer.find("\r", start)
    if cr == -1 or (lf != -1 and lf < cr):
        return None if lf == -1 else (lf, 1)
    if cr + 1 == len(buffer):
        return None  # a lone CR at the end may be the first half of CRLF: wait for more
    return cr, 2 if buffer[cr + 1] == "\n" else 1
