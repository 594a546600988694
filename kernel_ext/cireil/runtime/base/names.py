"""Non-UTF-8 names in an escaped form: shown, listed, stored and sent to the model without crashing.

Linux file names are bytes. Python hands a name that is not UTF-8 over with each bad byte as a lone
surrogate (U+DC80..U+DCFF, "surrogateescape"), and such a string cannot be encoded as UTF-8: JSON
for the model, sqlite, the notebook all fail on it. Every tool result is passed through `clean`,
which writes each such byte as `\\xNN` (caf\\xe9.txt); the path layer turns `\\xNN` (NN 80..ff) back
into the byte, so the escaped name a tool showed opens the file it names. Any other lone surrogate
(from a model's JSON, say) is written `\\uXXXX` and stays text.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_BYTE_ESCAPE = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")
MAX_DEPTH = 200  # deeper than this a result is not walked further (parsers bound depth before this)


def _escape_one(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def escape(text: str) -> str:
    """`text` with every lone surrogate escaped; the same string object when there is none."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_escape_one, text)


def unescape_path(path: str) -> str:
    """A path as given by a tool or a person, with `\\xNN` (NN 80..ff) back to the raw byte it stands for."""
    if "\\x" not in path:
        return path
    return _BYTE_ESCAPE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), path)


def clean(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings) with every string `escape`d; unchanged objects are reused."""
    if isinstance(value, str):
        return escape(value)
    if not isinstance(value, dict | list | tuple):
        return value
    return _clean(value, 0)


def _clean(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return escape(value)
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        out = {escape(k) if isinstance(k, str) else k: _clean(v, depth + 1) for k, v in value.items()}
        same = all(a is b for a, b in zip(out.values(), value.values(), strict=True)) and all(
            a is b for a, b in zip(out, value, strict=True)
        )
        return value if same else out
    if isinstance(value, list | tuple):
        items = [_clean(v, depth + 1) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items
    return value
