"""query-sessions matching: the real matchers, and the literals an index can prefilter with.

The index holds `fold(text)`: every character replaced by one representative of the characters
Python's `re.IGNORECASE` treats as equal to it. A literal that must occur in a match, folded the same
way, then occurs in the folded text of every match, so the index can only drop non-matches; the
real matcher (substring, regex, glob) still decides every candidate.

Regex and glob queries run on RE2 (`google-re2`), which matches in time linear in the text, so a
pattern like `(a+)+$` from a model cannot freeze the kernel. RE2 has no backreferences and no
lookaround; such a pattern is refused with a message saying so. A whole query also has a time
budget (`search_budget`): past it the search stops with an error instead of running on.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..base.cancel import cancel_requested

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


# only non-ASCII characters are in either table, and few at that: a text without them is folded by lower()
# alone (str.translate with a dict costs a dictionary lookup per character: most of an index build's time)
_FOLDED = re.compile("[" + "".join(re.escape(chr(c)) for c in _EXTRA) + "]") if _EXTRA else None


def fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    if "\u0130" in text:
        text = text.translate(_BEFORE_LOWER)
    low = text.lower()
    return low.translate(_EXTRA) if _FOLDED is not None and _FOLDED.search(low) else low


def glob_to_regex(pattern: str) -> str:
    """Whole-text glob as an RE2 pattern: `*` any run (newlines too), `?` one character, the rest literal.

    RE2 runs it in linear time however many stars there are (a backtracking engine takes time
    growing with the power of the star count on a text that almost matches).
    """
    out = []
    for char in pattern:
        if char == "*":
            if not out or out[-1] != ".*":  # `**` matches what `*` does
                out.append(".*")
        elif char == "?":
            out.append(".")
        else:
            out.append(_re2_literal(char))
    return "".join(out)


def _re2_literal(char: str) -> str:
    # letters, digits and non-ASCII stand for themselves, ASCII punctuation escaped, the rest by code
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:  # a lone surrogate: matched as U+FFFD, like the text (see _safe_text)
        return r"\x{fffd}"
    if char.isalnum() or code > 0x7F:
        return char
    if 0x21 <= code <= 0x7E:
        return "\\" + char
    return f"\\x{{{code:x}}}"


BUDGET_S = 5.0  # one query's matching, all messages together; raise it with `search_budget`


class SearchBudgetExceeded(Exception):
    """A query ran past its time budget; the search was stopped, not finished."""

    def __init__(self, budget_s: float, tested: int) -> None:
        self.budget_s = budget_s
        self.tested = tested
        super().__init__(f"the search stopped after {budget_s:g} s ({tested} messages tested)")


class _Budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.tested = 0
        self.exceeded = False
        self.cancelled = False

    def check(self) -> None:
        self.tested += 1
        if cancel_requested():  # an interrupt: stop now, not when the budget runs out
            self.cancelled = True
            raise SearchBudgetExceeded(self.seconds, self.tested)
        if time.monotonic() > self.deadline:
            self.exceeded = True
            raise SearchBudgetExceeded(self.seconds, self.tested)


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("cireil_search_budget", default=None)


@contextlib.contextmanager
def search_budget(seconds: float | None = None) -> Iterator[_Budget]:
    """Queries compiled inside stop with SearchBudgetExceeded once `seconds` have passed.

    The store calls the matcher from inside SQLite, which turns the exception into its own error;
    `budget.exceeded` tells the caller which of the two happened.
    """
    budget = _Budget(BUDGET_S if seconds is None else seconds)
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


_UNSUPPORTED = (
    (re.compile(r"\\[1-9]|\(\?P=|\\g<"), "backreferences"),
    (re.compile(r"\(\?<?[=!]"), "lookaround ((?=, (?!, (?<=, (?<!)"),
)


def _re2(pattern: str, *, dot_nl: bool) -> Callable[[str], object]:
    """An RE2 pattern, case-insensitive; raises re.error with RE2's reason (and what RE2 lacks)."""
    import re2  # lazy: only a regex or glob query needs it

    options = re2.Options()
    options.case_sensitive = False
    options.dot_nl = dot_nl
    options.never_capture = True
    options.log_errors = False  # RE2 would print every bad pattern to the kernel's stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        for found, feature in _UNSUPPORTED:
            if found.search(pattern):
                reason += (
                    f"; {feature} are not supported: patterns run on RE2, which matches in linear time"
                    " (rewrite without them, or search with mode raw or glob)"
                )
                break
        raise re.error(reason) from None


def _safe_text(text: str) -> str:
    # RE2 takes UTF-8: a lone surrogate (a non-UTF-8 file name in a message) is matched as U+FFFD
    return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _timed(match: Callable[[str], object]) -> Callable[[str], bool]:
    budget = _BUDGET.get()

    def test(text: str) -> bool:
        if budget is not None:
            budget.check()
        try:
            return match(text) is not None
        except UnicodeEncodeError:
            return match(_safe_text(text)) is not None

    return test


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
    """Raises re.error for an invalid regex (or one RE2 cannot run); ValueError for an unknown mode.

    A query compiled inside `search_budget` raises SearchBudgetExceeded from `test` once it is over.
    """
    if mode == "raw":
        literals = (fold(query),) if len(query) >= MIN_LITERAL else ()
        return Matcher(mode, query, lambda text: query in text, literals, substring=query)
    if mode == "regex":
        compiled = _re2(query, dot_nl=False)
        literals = tuple(fold(r) for r in _regex_literals(query, re.IGNORECASE))
        return Matcher(mode, query, _timed(compiled.search), literals)
    if mode == "glob":
        compiled = _re2(glob_to_regex(query), dot_nl=True)
        pieces = re.split(r"[*?]+", query)
        literals = tuple(fold(p) for p in pieces if len(p) >= MIN_LITERAL)
        return Matcher(mode, query, _timed(compiled.fullmatch), literals)
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
