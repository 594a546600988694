"""query-sessions matching: the real matchers, and the literals an index can prefilter with.

The index holds `fold(text)`: every character replaced by one representative of the characters
Python's `re.IGNORECASE` treats as equal to it. A literal that must occur in a match, folded the same
way, then occurs in the folded text of every match, so the index can only drop non-matches; the
real matcher (substring, regex, glob) still decides every candidate.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MODES = ("raw", "glob", "regex")
MIN_LITERAL = 3  # the trigram index cannot look up anything shorter


def _extra_cases() -> dict[int, int]:
    """Characters re.IGNORECASE matches beyond simple lowercasing (ſ ~ s, K ~ k, ς ~ σ), to one representative."""
    try:
        from re import _casefix  # private, but it is the table re itself uses

        extra: dict[int, tuple[int, ...]] = _casefix._EXTRA_CASES
    except (ImportError, AttributeError):  # another Python: fewer folds, the index is then a little stricter
        return {}
    table: dict[int, int] = {}
    for char, others in extra.items():
        least = min(char, *others)
        if least != char:
            table[char] = least
    return table


_EXTRA = _extra_cases()
# str.lower() is the full mapping; re uses the simple one, which differs only for U+0130 (İ -> i, not i + dot)
_BEFORE_LOWER = {0x130: "i"}


def fold(text: str) -> str:
    return text.translate(_BEFORE_LOWER).lower().translate(_EXTRA)


def glob_to_regex(pattern: str) -> str:
    """Whole-text glob: `*` any run (newlines too), `?` one character, everything else literal (`[` included)."""
    out = []
    for char in pattern:
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        else:
            out.append(re.escape(char))
    return "".join(out)


def _regex_literals(pattern: str, flags: int) -> list[str]:
    """Runs of literal characters every match of `pattern` must contain (top level only, no alternation)."""
    try:
        from re import _parser  # the parser re compiles with: no second, subtly different, regex grammar
    except ImportError:
        return []
    try:
        parsed = _parser.parse(pattern, flags)
    except re.error:
        return []
    runs: list[str] = []
    current: list[str] = []
    for op, arg in parsed:
        if op is _parser.LITERAL:
            current.append(chr(arg))
            continue
        runs.append("".join(current))
        current = []
    runs.append("".join(current))
    return [r for r in runs if len(r) >= MIN_LITERAL]


@dataclass(frozen=True)
class Matcher:
    """One compiled query: `test(text)` is the real decision, `literals` what the index may prefilter by."""

    mode: str
    query: str
    test: Callable[[str], bool]
    literals: tuple[str, ...]  # folded; empty = the index cannot help, every message is a candidate
    substring: str | None = None  # raw mode: the exact, case-sensitive substring (SQL instr can test it)


def compile_query(query: str, mode: str) -> Matcher:
    """Raises re.error for an invalid regex; ValueError for an unknown mode."""
    if mode == "raw":
        literals = (fold(query),) if len(query) >= MIN_LITERAL else ()
        return Matcher(mode, query, lambda text: query in text, literals, substring=query)
    if mode == "regex":
        compiled = re.compile(query, re.IGNORECASE)
        literals = tuple(fold(r) for r in _regex_literals(query, re.IGNORECASE))
        return Matcher(mode, query, lambda text: compiled.search(text) is not None, literals)
    if mode == "glob":
        compiled = re.compile(glob_to_regex(query), re.IGNORECASE | re.DOTALL)
        pieces = re.split(r"[*?]+", query)
        literals = tuple(fold(p) for p in pieces if len(p) >= MIN_LITERAL)
        return Matcher(mode, query, lambda text: compiled.fullmatch(text) is not None, literals)
    raise ValueError(f"unknown search mode: {mode!r} (expected one of {', '.join(MODES)})")


MAX_TRIGRAMS = 8  # per literal: beyond a few, another doclist to merge costs more than the candidates it drops


def trigrams(literal: str) -> list[str]:
    """Trigrams tiling the literal (plus its last one), spread over it when there are too many."""
    grams = [literal[i : i + MIN_LITERAL] for i in range(0, len(literal) - MIN_LITERAL + 1, MIN_LITERAL)]
    last = literal[-MIN_LITERAL:]
    if last not in grams:
        grams.append(last)
    if len(grams) > MAX_TRIGRAMS:
        step = len(grams) / MAX_TRIGRAMS
        grams = [grams[int(i * step)] for i in range(MAX_TRIGRAMS - 1)] + [grams[-1]]
    return list(dict.fromkeys(grams))


def fts_expression(literals: tuple[str, ...]) -> str:
    """An FTS5 query requiring every trigram of every literal (an index without positions has no phrases)."""
    grams = dict.fromkeys(g for lit in literals for g in trigrams(lit))
    return " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)
