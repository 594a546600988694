"""The terminal's view of a running eval: a one-line bar on a terminal, one line per finished run otherwise."""

from __future__ import annotations

import sys
from typing import TextIO

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
            self.stream.write(f"\r[{bar}] {done}/{total}  {report.passed} passed  {failed} failed ")
            if done == total or report.interrupted:
                self.stream.write("\n")
        else:
            for r in report.results[self._shown :]:
                word = r.status.upper()
                self.stream.write(
                    f"[{self._shown + 1}/{total}] {word} {r.scenario} [{r.variant} #{r.repeat + 1}]"
                    f" {r.latency_s:.1f}s\n"
                )
                self._shown += 1
        self.stream.flush()
