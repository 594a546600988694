"""Control characters made visible: text from others shown, never acted on by a terminal or front end.

ESC starts terminal sequences (OSC title, OSC 52 clipboard writes, screen clears, CSI colours and
cursor moves); C1 controls do the same in one byte; a lone CR rewinds the line; bidi overrides make
text read differently from what it is. `visible` replaces each with a stand-in (␛, ␇, ␍, \\x9b,
⟨U+202E⟩); newline and tab stay. Used by every display bundle (render/safe.py) and by config error
messages, which quote what a file says.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

from .names import escape

# C0 except tab and newline, a CR not followed by LF, DEL, C1, bidi embeddings/overrides/isolates
CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ␀ … ␟, ␛ for ESC
    if code == 0x7F:
        return "\u2421"  # ␡
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"⟨U+{code:04X}⟩"


def visible(text: str) -> str:
    """`text` with every control character shown instead of acted on (tab and newline kept)."""
    return CONTROLS.sub(_stand_in, text)


def terminal_safe(text: str) -> str:
    """`text` as a terminal may be given it: controls made `visible`, lone surrogates (a non-UTF-8 name)
    escaped so that writing it cannot fail. Every line the `cireil` command prints goes through this."""
    return visible(escape(text))


class TerminalSafe:
    """A text stream whose every write goes through `terminal_safe` (the rest is the stream's own): the
    `cireil` command and the eval workers print through it, so no print anywhere can reach the terminal raw."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_safe(text))
        return len(text)

    def write_control(self, text: str) -> None:
        """The command's own cursor moves (the progress bar's carriage return), never text from others."""
        self._stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding: the stream's
        return getattr(self._stream, name)
