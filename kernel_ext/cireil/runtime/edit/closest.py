"""Where in a file an `oldText` that was not found comes closest: for people reading a failed edit.

The agent-facing error keeps the spec's Context; this is what a notebook shows instead. Bounded work:
one similarity score per distinct line (capped in count and length) to find candidate anchors, then
a handful of whole-window comparisons.
"""

from __future__ import annotations

import difflib
import heapq
from dataclasses import dataclass

MAX_LINES = 20_000  # beyond this the file's tail is not searched
_LINE_CAP = 300  # characters of a line that take part in scoring
_CANDIDATES = 4
_SHORTLIST = 24
_WINDOW_CAP = 4000  # characters of a window compared as a whole


@dataclass(frozen=True)
class Closest:
    start: int  # 1-based line number of the first line of `lines`
    lines: list[str]  # the file's lines in the window
    wanted: list[str]  # the oldText's lines, aligned with `lines`
    score: float  # 0..1


def _key(line: str) -> str:
    return " ".join(line.split())[:_LINE_CAP]  # whitespace-insensitive, as edit's own matching is


def _close(key: str, keys: list[str]) -> list[str]:
    """The few `keys` most like `key`: a linear-time filter (quick_ratio) first, the exact ratio on the rest."""
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(key)  # the needle's tables are built once

    def quick(candidate: str) -> float:
        matcher.set_seq1(candidate)
        return matcher.quick_ratio()

    def exact(candidate: str) -> float:
        matcher.set_seq1(candidate)
        return matcher.ratio()

    shortlist = heapq.nlargest(_SHORTLIST, keys, key=quick)
    return heapq.nlargest(_CANDIDATES, shortlist, key=exact)


def closest(text: str, old_text: str) -> Closest | None:
    """The window of the file most like `old_text` (as many lines as it has), or None for an empty file."""
    lines = text.splitlines()[:MAX_LINES]
    wanted = old_text.strip("\n").splitlines()
    anchors = [(i, _key(w)) for i, w in enumerate(wanted) if _key(w)]
    if not lines or not anchors:
        return None
    # the needle's longest line is its most telling one; its first line is where a window starts
    picks = {anchors[0], max(anchors, key=lambda a: len(a[1]))}
    by_key: dict[str, list[int]] = {}
    for n, line in enumerate(lines):
        by_key.setdefault(_key(line), []).append(n)
    starts: set[int] = set()
    for offset, key in picks:
        for match in _close(key, list(by_key)):
            starts.update(max(0, n - offset) for n in by_key[match][:_CANDIDATES])
    target = "\n".join(_key(w) for w in wanted)[:_WINDOW_CAP]
    best: Closest | None = None
    for start in sorted(starts):
        window = lines[start : start + len(wanted)]
        joined = "\n".join(_key(x) for x in window)[:_WINDOW_CAP]
        score = difflib.SequenceMatcher(None, target, joined, autojunk=False).ratio()
        if best is None or score > best.score:
            best = Closest(start + 1, window, wanted[: len(window)], score)
    return best
