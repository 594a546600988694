"""The terminal's view of a running eval: a one-line bar on a terminal, one line per finished run otherwise."""

from __future__ import annotations

import sys
from typing import TextIO

from ..base.controls import terminal_safe
from .report import EvalReport


class TerminalProgress:
    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = width
        self._shown = 0

    def __call__(self, report: EvalReport) -> None:
        done, total = len(report.results), report.total
        if self.tty:
            filled = round(self.width * done / total) if total else self.width
            bar = "#" * filled + "." * (self.width - filled)
            failed = done - report.passed
            # the redraw's carriage return is ours; a stream that filters text (the CLI's) passes it as it is
            getattr(self.stream, "write_control", self.stream.write)("\r")
            self.stream.write(f"[{bar}] {done}/{total}  {report.passed} passed  {failed} failed ")
            if done == total or report.interrupted:
                self.stream.write("\n")
        else:
            for r in report.results[self._shown :]:
                word = r.status.upper()
                line = f"[{self._shown + 1}/{total}] {word} {r.scenario} [{r.variant} #{r.repeat + 1}]"
                self.stream.write(terminal_safe(line) + f" {r.latency_s:.1f}s\n")
                self._shown += 1
        self.stream.flush()
