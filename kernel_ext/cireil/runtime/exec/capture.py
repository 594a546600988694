"""Capture of a command's stdout and stderr with bounded memory.

Bytes are kept in memory only while the output may still be returned inline (stdout + stderr within
`inlineThresholdBytes`, when `inline` is on). From the moment it cannot be, each stream goes raw to
its spill file as it arrives. Whatever happens, a LineWindow per stream keeps just what previews
need. If the spill directory or a file cannot be written (access or I/O error: read-only mount,
unwritable directory, disk full), capture switches to fallback: files are abandoned and removed,
and only the bounded windows remain (spec: fallbackInline).

The files of one call hold at most `maxOutputBytes` together: past that, capture stops writing
(the command runs on, its output is still counted and the windows still see its end) and the
result says so, so one command cannot fill the disk through the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..base.errors import ToolError
from ..config.tools_config import ExecConfig
from .lines import LineWindow
from .spill import SpillDir

STREAMS = ("stdout", "stderr")
SUFFIX = {"stdout": ".out", "stderr": ".err"}

OpenSpill = Callable[[], SpillDir]
write_fd = os.write  # one seam, so tests can make the disk "fill up" for capture alone


class Stream:
    def __init__(self, name: str, config: ExecConfig) -> None:
        self.name = name
        cap = config.maxPreviewLineLength * 4 + 4  # enough bytes for that many UTF-8 characters
        self.window = LineWindow(config.previewHead, config.previewTail, cap)
        self.buffer: bytearray | None = bytearray()  # kept while the output may still be inline
        self.fd: int | None = None
        self.path: str | None = None

    @property
    def size(self) -> int:
        return self.window.size


class Capture:
    def __init__(self, config: ExecConfig, open_spill: OpenSpill) -> None:
        self.config = config
        self._open_spill = open_spill
        self.streams = {name: Stream(name, config) for name in STREAMS}
        self.spill: SpillDir | None = None
        self.spilling = not config.inline  # with inline off, every byte goes to a file
        self.failure: str | None = None  # why writing captured output failed -> fallbackInline
        self.written = 0  # bytes saved to spill files, all streams together
        self.capped = False  # maxOutputBytes reached: the files hold only the start of the output

    @property
    def total(self) -> int:
        return sum(s.size for s in self.streams.values())

    @property
    def inline(self) -> bool:
        return not self.spilling and self.failure is None

    @property
    def fallback(self) -> bool:
        return self.failure is not None

    def feed(self, name: str, data: bytes) -> None:
        stream = self.streams[name]
        stream.window.feed(data)
        if self.failure is not None:
            return
        if not self.spilling:
            assert stream.buffer is not None
            stream.buffer += data
            if self.total <= self.config.inlineThresholdBytes:
                return
            self.spilling = True  # over the threshold: move what is buffered to files, then stream
            for other in self.streams.values():
                if other.buffer:
                    self._write(other, bytes(other.buffer))
                other.buffer = None
            return
        self._write(stream, data)

    def _write(self, stream: Stream, data: bytes) -> None:
        room = self.config.maxOutputBytes - self.written
        if len(data) > room:
            self.capped = True
            data = data[: max(room, 0)]
            if not data:
                return
        try:
            if self.spill is None:
                self.spill = self._open_spill()
            if stream.fd is None:
                stream.fd, stream.path = self.spill.create(SUFFIX[stream.name])
            view = memoryview(data)
            while view:
                written = write_fd(stream.fd, view)
                view = view[written:]
                self.written += written
        except (OSError, ToolError) as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self.failure = exc.message if isinstance(exc, ToolError) else (exc.strerror or str(exc))
        for stream in self.streams.values():
            stream.buffer = None
            if stream.fd is not None:
                os.close(stream.fd)
                stream.fd = None
            if stream.path is not None and self.spill is not None:
                self.spill.remove(stream.path)  # no path is returned, so nothing may be left behind
            stream.path = None

    def finish(self) -> None:
        """Close the files; a late error (e.g. on close) still turns into fallback."""
        for stream in self.streams.values():
            if stream.fd is not None:
                fd, stream.fd = stream.fd, None
                try:
                    os.close(fd)
                except OSError as exc:
                    self._fail(exc)
        if self.spill is not None:
            self.spill.close()
            self.spill = None

    def inline_text(self, name: str) -> str:
        buffer = self.streams[name].buffer
        return bytes(buffer or b"").decode("utf-8", "replace")
