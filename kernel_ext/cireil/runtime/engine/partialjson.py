"""Reading one string field out of a JSON object that is still arriving.

While a `respond` call streams, its arguments are an unfinished JSON text such as
`{"content": "Hello wo`. The notebook shows the content as it grows, so this extracts the
decoded prefix of that string. Only the top level of the object is looked at: a key of the same
name nested deeper, or the key's name appearing inside another string, is not the field.
"""

from __future__ import annotations

_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_WS = " \t\r\n"


class _Incomplete(Exception):
    """The text ended inside the thing being read."""


def partial_string_field(text: str, key: str) -> str | None:
    """The (possibly unfinished) string value of top-level `key`, or None before its value has started."""
    i = _skip_ws(text, 0)
    if i >= len(text) or text[i] != "{":
        return None
    i += 1
    try:
        while True:
            i = _skip_ws(text, i)
            _need(text, i)
            if text[i] == "}":
                return None
            if text[i] == ",":
                i += 1
                continue
            if text[i] != '"':
                return None  # not JSON we understand; a partial view is only a nicety
            name, i, done = _read_string(text, i + 1)
            if not done:
                return None
            i = _skip_ws(text, i)
            _need(text, i)
            if text[i] != ":":
                return None
            i = _skip_ws(text, i + 1)
            _need(text, i)
            if name == key:
                if text[i] != '"':
                    return None  # the field is not a string
                return _read_string(text, i + 1)[0]
            i = _skip_value(text, i)
    except _Incomplete:
        return None


def _need(text: str, i: int) -> None:
    if i >= len(text):
        raise _Incomplete


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _read_string(text: str, i: int) -> tuple[str, int, bool]:
    """Decode from just after an opening quote: (decoded so far, index after it, closed?).

    An escape cut off by the end of the text is dropped, not guessed: `\\u00` shows nothing yet.
    """
    out: list[str] = []
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1, True
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= n:
            break
        esc = text[i + 1]
        if esc != "u":
            # an unknown escape is invalid JSON; showing the character is the kindest partial view
            out.append(_SIMPLE_ESCAPES.get(esc, esc))
            i += 2
            continue
        code = _hex4(text, i + 2)
        if code is None:
            break
        if code < 0:  # not hex: invalid JSON, shown as written
            out.append("u")
            i += 2
            continue
        i += 6
        if 0xD800 <= code < 0xDC00:
            # a high surrogate: wait for its partner, unless the text already shows there is none
            rest = text[i : i + 6]
            if "\\u".startswith(rest[:2]) and len(rest) < 6:
                break
            low = _hex4(text, i + 2) if rest.startswith("\\u") else None
            if low is not None and 0xDC00 <= low < 0xE000:
                out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                i += 6
            else:
                out.append("\ufffd")
            continue
        out.append("\ufffd" if 0xDC00 <= code < 0xE000 else chr(code))
    return "".join(out), n, False


def _hex4(text: str, i: int) -> int | None:
    """The code of four hex digits at i; None when the text ends first, -1 when they are not hex."""
    digits = text[i : i + 4]
    if len(digits) < 4:
        return None if all(c in "0123456789abcdefABCDEF" for c in digits) else -1
    if not all(c in "0123456789abcdefABCDEF" for c in digits):
        return -1
    return int(digits, 16)


def _skip_value(text: str, i: int) -> int:
    """Index just after the JSON value starting at i (strings, nested objects and arrays, scalars)."""
    ch = text[i]
    if ch == '"':
        _, end, done = _read_string(text, i + 1)
        if not done:
            raise _Incomplete
        return end
    if ch in "{[":
        depth = 0
        while i < len(text):
            ch = text[i]
            if ch == '"':
                _, i, done = _read_string(text, i + 1)
                if not done:
                    raise _Incomplete
                continue
            if ch in "{[":
                depth += 1
            elif ch in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise _Incomplete
    while i < len(text) and text[i] not in ",}" + _WS:
        i += 1
    if i >= len(text):
        raise _Incomplete
    return i
