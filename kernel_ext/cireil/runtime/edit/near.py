"""`near` anchors -> search windows (reference §4.10): whole-line ranges the oldText must lie in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..base.errors import ToolError
from . import tiers
from .text import Lines

DEFAULT_RADIUS = 15

Ranges = list[tuple[int, int]]  # 1-based inclusive line ranges, sorted and disjoint


@dataclass(frozen=True)
class Window:
    ranges: Ranges
    landmark: int | None = None  # line a string/symbol/line anchor resolved to, for messages
    radius: int | None = None

    def spans(self, lines: Lines) -> list[tuple[int, int]]:
        return [(lines.start(a), lines.end(b)) for a, b in self.ranges]


def _merge(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _intersect(x: Ranges, y: Ranges) -> Ranges:
    out: Ranges = []
    for a, b in x:
        for c, d in y:
            lo, hi = max(a, c), min(b, d)
            if lo <= hi:
                out.append((lo, hi))
    return _merge(out)


def _around(line: int, radius: int, count: int) -> tuple[int, int]:
    return max(1, line - radius), min(count, line + radius)


def _occurrences(body: str, lines: Lines, text: str) -> list[int]:
    return sorted({lines.line_of(m.start) for m in tiers.find(body, text)})


def _excerpt(body: str) -> str:
    return body[:500] + ("..." if len(body) > 500 else "")


def _int(value: Any) -> int:
    return math.floor(value)


def _symbol(anchor: dict, body: str, lines: Lines, where: str) -> Window:
    symbol = anchor["symbol"]
    radius = _int(anchor.get("radius", DEFAULT_RADIUS))
    found = _occurrences(body, lines, symbol) if symbol.strip() else []
    if not found:
        raise ToolError(f'Could not find symbol "{symbol}" for {where}.')
    if "index" in anchor:
        k = _int(anchor["index"])
        if not 1 <= k <= len(found):
            raise ToolError(
                f'Symbol "{symbol}" for {where} has {len(found)} occurrence(s); requested index {k} is out of range.'
            )
        landmark = found[k - 1]
    elif "line" in anchor:
        target = _int(anchor["line"])
        near = [f for f in found if abs(f - target) <= radius]
        if not near:
            raise ToolError(f'Symbol "{symbol}" for {where} has no occurrence within {radius} lines of line {target}.')
        best = min(abs(f - target) for f in near)
        closest = [f for f in near if abs(f - target) == best]
        if len(closest) > 1:
            raise ToolError(
                f'Symbol "{symbol}" for {where} is ambiguous near line {target} '
                f"(multiple occurrences at the same distance: lines {', '.join(map(str, closest))})."
            )
        landmark = closest[0]
    elif len(found) == 1:
        landmark = found[0]
    else:
        raise ToolError(
            f'Symbol "{symbol}" for {where} is ambiguous ({len(found)} matches, at lines '
            f"{', '.join(map(str, found[:10]))}). Add line, index, or direction to pick one."
        )
    direction = anchor.get("direction")
    if direction == "after":
        lo, hi, word = landmark + 1, min(lines.count, landmark + radius), "after"
    elif direction == "before":
        lo, hi, word = max(1, landmark - radius), landmark - 1, "before"
    else:
        (lo, hi), word = _around(landmark, radius, lines.count), "around"
    if lo > hi:
        raise ToolError(f'"near" {word} window for symbol "{symbol}" at line {landmark} is empty.')
    return Window([(lo, hi)], landmark, radius)


def _one(anchor: Any, body: str, lines: Lines, where: str) -> Window:
    if isinstance(anchor, str):
        found = _occurrences(body, lines, anchor) if anchor.strip() else []
        if not found:
            raise ToolError(
                f'Could not find "near" anchor for {where}. If "{anchor}" is a symbol name, use '
                f'{{"symbol": "{anchor}"}} with line, index or direction to pick an occurrence.'
                f"\n\nContext:\n{_excerpt(body)}"
            )
        ranges = _merge([_around(f, DEFAULT_RADIUS, lines.count) for f in found])
        return Window(ranges, found[0], DEFAULT_RADIUS)
    if "symbol" in anchor:
        return _symbol(anchor, body, lines, where)
    if "startLine" in anchor or "endLine" in anchor:
        if "startLine" not in anchor or "endLine" not in anchor:
            raise ToolError(f'"near" for {where}: startLine and endLine must both be specified.')
        a, b = _int(anchor["startLine"]), _int(anchor["endLine"])
        if not (1 <= a <= b <= lines.count):
            raise ToolError(f'"near" for {where}: lines {a}-{b} are outside the file ({lines.count} lines).')
        return Window([(a, b)])
    if "line" in anchor:  # a bare line hint: the lines around it, like a symbol landmark
        line, radius = _int(anchor["line"]), _int(anchor.get("radius", DEFAULT_RADIUS))
        if not 1 <= line <= lines.count:
            raise ToolError(f'"near" for {where}: line {line} is outside the file ({lines.count} lines).')
        return Window([_around(line, radius, lines.count)], line, radius)
    raise ToolError(
        f'Invalid "near" anchor for {where}: expected a string, object with symbol/startLine/endLine, or array.'
    )


def resolve(near: Any, body: str, lines: Lines, where: str) -> Window | None:
    """The window(s) an edit is confined to, or None when `near` does not narrow anything."""
    if near is None or near == "":
        return None
    if not isinstance(near, list):
        return _one(near, body, lines, where)
    ranges: Ranges = [(1, lines.count)]
    for k, item in enumerate(near, start=1):
        ranges = _intersect(ranges, _one(item, body, lines, where).ranges)
        if not ranges:
            raise ToolError(f'"near" anchors for {where} have no overlapping window after landmark {k}.')
    return Window(ranges)
