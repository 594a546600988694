"""Where an oldText occurs, in tiers: exact, then whitespace forgiven per line, then spacing around punctuation.

Every tier only ever forgives whitespace: the needle's characters other than spaces, tabs and line
breaks must all be present, in order, with nothing in between but spaces and tabs (and one line
break where the needle has one). So a stale or invented oldText can never match, however close it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EXACT, WHITESPACE, PUNCTUATION = 0, 1, 2

_SEP = r"[ \t]*\r?\n"  # end of a line: trailing spaces, then `\n` or `\r\n`
_LEAD = r"[ \t]*"  # indentation, any depth, tabs or spaces
_TOKENS = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Match:
    """One candidate site. For forgiving tiers `start` is moved back to the line start when only
    indentation precedes the match, so the replacement can own (and re-indent) that indentation."""

    start: int
    end: int
    tier: int
    from_line_start: bool = False


def _line_pattern(line: str, tier: int) -> str:
    if tier == WHITESPACE:
        return r"[ \t]+".join(re.escape(word) for word in line.split())
    pieces = _TOKENS.findall(line)
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i:
            # two words kept apart by whitespace stay apart; next to punctuation spacing is optional
            both_words = (pieces[i - 1][-1].isalnum() or pieces[i - 1][-1] == "_") and (
                piece[0].isalnum() or piece[0] == "_"
            )
            out.append(r"[ \t]+" if both_words else r"[ \t]*")
        out.append(re.escape(piece))
    return "".join(out)


def needle_pattern(needle: str, tier: int) -> re.Pattern[str]:
    lines = needle.replace("\r\n", "\n").split("\n")
    parts = []
    for i, line in enumerate(lines):
        body = _line_pattern(line, tier)
        parts.append((_LEAD + body) if i and body else body)
    return re.compile(_SEP.join(parts))


def exact(haystack: str, needle: str) -> list[Match]:
    """Every offset where the needle occurs, overlapping occurrences included."""
    out: list[Match] = []
    pos = haystack.find(needle)
    while pos >= 0:
        out.append(_settle(haystack, Match(pos, pos + len(needle), EXACT)))
        pos = haystack.find(needle, pos + 1)
    return out


def _settle(haystack: str, m: Match) -> Match:
    """An exact hit that starts inside or right after a line's indentation means oldText was indented
    less than the file. Spliced verbatim, newText's first line would sit at the file's depth and its
    other lines at the model's. Such a hit becomes a line-start match, so newText is re-indented."""
    line_start = haystack.rfind("\n", 0, m.start) + 1
    if line_start < m.start and not haystack[line_start : m.start].strip(" \t"):
        return Match(line_start, m.end, WHITESPACE, True)
    return m


def _back_over_breaks(haystack: str, start: int, breaks: int) -> int | None:
    """Where a match must begin so that `breaks` line breaks (blank lines between them) precede
    `start`, trailing spaces included; None when the text before `start` is not like that."""
    pos = start
    for _ in range(breaks):
        while pos and haystack[pos - 1] in " \t":
            pos -= 1
        if not pos or haystack[pos - 1] != "\n":
            return None
        pos -= 1
        if pos and haystack[pos - 1] == "\r":
            pos -= 1
    while pos and haystack[pos - 1] in " \t":
        pos -= 1
    return pos


def forgiving(haystack: str, needle: str, tier: int) -> list[Match]:
    # Leading blank lines are matched by looking back from each hit rather than inside the pattern:
    # a pattern that starts with optional whitespace has no literal prefix to scan for, and regex
    # search then costs a try at every offset of a large file.
    plain = needle.replace("\r\n", "\n")
    body = plain.lstrip(" \t\n")
    breaks = plain[: len(plain) - len(body)].count("\n")
    pattern = needle_pattern(body, tier)
    out: list[Match] = []
    pos = 0
    while (m := pattern.search(haystack, pos)) is not None:
        start, end = m.span()
        if end == start:  # cannot happen for a needle with content; guards against an endless loop
            break
        pos = start + 1
        if breaks:
            if haystack[haystack.rfind("\n", 0, start) + 1 : start].strip(" \t"):
                continue  # the needle's content starts a line; here it does not
            begin = _back_over_breaks(haystack, start, breaks)
            if begin is None:
                continue
            start = begin
        line_start = haystack.rfind("\n", 0, start) + 1
        indent_only = not haystack[line_start:start].strip(" \t")
        out.append(Match(line_start if indent_only else start, end, tier, indent_only))
    return out


def dedupe(matches: list[Match]) -> list[Match]:
    """Sort by position; of two nested candidates keep the outer one (reference §4.10)."""
    out: list[Match] = []
    for m in sorted(matches, key=lambda m: (m.start, m.end)):
        if out and out[-1].start <= m.start and m.end <= out[-1].end:
            continue
        if out and m.start <= out[-1].start and out[-1].end <= m.end:
            out[-1] = m
            continue
        out.append(m)
    return out


def find(haystack: str, needle: str) -> list[Match]:
    """Candidates of the first tier that has any (the deciding tier)."""
    hits = exact(haystack, needle)
    if hits:
        return hits
    for tier in (WHITESPACE, PUNCTUATION):
        hits = dedupe(forgiving(haystack, needle, tier))
        if hits:
            return hits
    return []


def find_in(haystack: str, needle: str, windows: list[tuple[int, int]]) -> list[Match]:
    """Candidates inside the windows. Exact and whitespace-forgiven candidates count together, since a
    window is already a narrow place; spacing around punctuation is the fallback when neither finds any."""

    def inside(m: Match) -> bool:
        return any(a <= m.start and m.end <= b for a, b in windows)

    exact_hits = [m for m in exact(haystack, needle) if inside(m)]
    loose = [m for m in forgiving(haystack, needle, WHITESPACE) if inside(m)]
    # a forgiving hit over an exact one is the same site: keep the exact reading of it
    loose = [m for m in loose if not any(m.start < e.end and e.start < m.end for e in exact_hits)]
    hits = dedupe(exact_hits + loose)
    if hits:
        return hits
    return dedupe([m for m in forgiving(haystack, needle, PUNCTUATION) if inside(m)])
