"""JSON from others (MCP servers, model providers) parsed with a depth limit and a clear error.

`json.loads` recurses once per nesting level: 100,000 nested arrays from a server raised
RecursionError, which no `except ValueError` caught, and a value that parsed just below Python's
limit overflowed later, in whatever walked it (rendering, encoding the next request). `loads` turns
both into `TooDeep` (a ValueError) at the door, so everything after it sees at most MAX_DEPTH levels.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 100  # nesting levels; real MCP results and tool arguments stay far below


class TooDeep(ValueError):
    """JSON nested deeper than the limit."""


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads that raises TooDeep (a ValueError) for input nested deeper than `max_depth`."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {max_depth} levels") from None
    # each level opens with a bracket, so text with no more brackets than levels allowed cannot nest deeper
    # (brackets inside strings only raise the count): most answers are proved shallow without walking them
    square, curly = (b"[", b"{") if isinstance(text, bytes) else ("[", "{")
    openers = text.count(square) + text.count(curly)  # type: ignore[arg-type]
    if openers > max_depth and too_deep(value, max_depth):
        raise TooDeep(f"JSON nested deeper than {max_depth} levels")
    return value


def too_deep(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """True when lists/dicts in `value` nest deeper than `max_depth`; iterative, stops at the first too deep."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False
