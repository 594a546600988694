"""Argument matchers and the ordering rules that compare a run's tool calls with a scenario's expectations.

Scenario regexes (`{ regex = ... }` argument matchers, `answer.regex`) run on RE2 (`google-re2`), which
matches in time linear in the text: the text is the model's, and `(a+)+$` on Python's backtracking `re`
would keep a run going long after its --timeout. RE2 has no backreferences and no lookaround; a scenario
using them is refused when its file is loaded (FILE:LINE and why), never at run time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

MATCHER_KINDS = ("exact", "regex", "subset", "any")
ORDERS = ("strict", "any", "at-least")


@dataclass(frozen=True)
class Matcher:
    kind: str  # one of MATCHER_KINDS
    value: Any = None

    def matches(self, actual: Any) -> bool:
        if self.kind == "any":
            return True
        if self.kind == "exact":
            return actual == self.value
        if self.kind == "regex":
            return isinstance(actual, str) and regex_search(self.value, actual)
        return is_subset(self.value, actual)

    def describe(self) -> str:
        if self.kind == "any":
            return "anything"
        if self.kind == "regex":
            return f"/{self.value}/"
        shown = json.dumps(self.value, ensure_ascii=False)
        return f"contains {shown}" if self.kind == "subset" else shown


_UNSUPPORTED = (
    (re.compile(r"\\[1-9]|\(\?P=|\\g<"), "backreferences"),
    (re.compile(r"\(\?<?[=!]"), "lookaround ((?=, (?!, (?<=, (?<!)"),
    (re.compile(r"\(\?[a-zA-Z]*x"), "verbose mode (?x)"),
    (re.compile(r"\\Z"), "\\Z (write \\z)"),
)


@lru_cache(maxsize=512)
def compile_regex(pattern: str) -> Callable[[str], Any]:
    """The pattern's RE2 `search`; ValueError with RE2's reason (and what RE2 lacks) when RE2 cannot run it."""
    import re2  # lazy: only scenarios with regexes need it

    options = re2.Options()
    options.never_capture = True  # only "does it match" is asked
    options.log_errors = False  # RE2 would print every bad pattern to stderr
    try:
        return re2.compile(pattern, options).search
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        for found, feature in _UNSUPPORTED:
            if found.search(pattern):
                reason += f"; {feature} not supported: scenario regexes run on RE2, which matches in linear time"
                break
        raise ValueError(reason) from None
    except UnicodeEncodeError:
        raise ValueError("it holds a lone surrogate, which RE2 (UTF-8) cannot take") from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def regex_search(pattern: str, text: str) -> bool:
    """Whether `pattern` (checked when the scenario was loaded) occurs in `text`, in time linear in the text."""
    search = compile_regex(pattern)
    try:
        return search(text) is not None
    except UnicodeEncodeError:  # RE2 takes UTF-8: a lone surrogate in the model's text is matched as U+FFFD
        return search(_SURROGATE.sub("\ufffd", text)) is not None


def is_subset(expected: Any, actual: Any) -> bool:
    """JSON subset: every key of an expected object is in the actual one with a subset value; an expected
    list matches when each of its items is a subset of some item of the actual list."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and is_subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and all(any(is_subset(e, a) for a in actual) for e in expected)
    return expected == actual


@dataclass(frozen=True)
class CallSpec:
    """An expected (or forbidden) call: a tool name and matchers for the arguments named; others are free."""

    tool: str
    args: tuple[tuple[str, Matcher], ...] = ()
    line: int | None = None
    ok: bool | None = None  # True: the call must also succeed (its result not `success: false`)

    def matches(self, call: dict) -> bool:
        if call.get("name") != self.tool:
            return False
        if self.ok is not None and call.get("ok", True) != self.ok:
            return False
        given = call.get("input") or {}
        return all(key in given and m.matches(given[key]) for key, m in self.args)

    def mismatch(self, call: dict) -> str:
        """Why a call to the same tool does not match, argument by argument."""
        given = call.get("input") or {}
        for key, m in self.args:
            if key not in given:
                return f"argument '{key}' missing"
            if not m.matches(given[key]):
                return (
                    f"argument '{key}' is {json.dumps(given[key], ensure_ascii=False)[:120]}, expected {m.describe()}"
                )
        if self.ok is not None and call.get("ok", True) != self.ok:
            return f"it failed: {call.get('error') or 'success: false'}" if self.ok else "it succeeded"
        return "matches"

    def describe(self) -> str:
        if not self.args:
            return self.tool
        return f"{self.tool}({', '.join(f'{k}={m.describe()}' for k, m in self.args)})"


@dataclass
class CallCheck:
    passed: bool
    failures: list[str] = field(default_factory=list)


def counted(calls: list[dict], expected: list[CallSpec]) -> list[dict]:
    """The calls an ordering rule looks at: the turn's plumbing (the tools that end it; answers are checked by
    [answer]) only when the scenario expects it."""
    from ..toolkit.registry import turn_enders

    plumbing = set(turn_enders()) - {spec.tool for spec in expected}
    return [c for c in calls if c.get("name") not in plumbing]


def _closest_miss(spec: CallSpec, calls: list[dict]) -> str:
    same = [c for c in calls if c.get("name") == spec.tool]
    if same:
        return f"expected call {spec.describe()}: {spec.tool} was called but {spec.mismatch(same[0])}"
    made = ", ".join(dict.fromkeys(c.get("name", "?") for c in calls)) or "no tool"
    return f"expected call {spec.describe()}: not called (called: {made})"


def check_calls(calls: list[dict], expected: list[CallSpec], order: str, forbidden: list[CallSpec]) -> CallCheck:
    """strict: exactly the expected calls, in that order; any: exactly those calls in any order;
    at-least: each expected call is made (in any order), other calls allowed."""
    failures: list[str] = []
    for spec in forbidden:
        for call in calls:
            if spec.matches(call):
                failures.append(f"forbidden call {spec.describe()} was made")
                break
    seen = counted(calls, expected)
    if order == "strict":
        for n, spec in enumerate(expected):
            if n >= len(seen):
                failures.append(f"call {n + 1}: expected {spec.describe()}, but only {len(seen)} calls were made")
                break
            if not spec.matches(seen[n]):
                got = seen[n].get("name")
                why = spec.mismatch(seen[n]) if got == spec.tool else f"got {got}"
                failures.append(f"call {n + 1}: expected {spec.describe()}: {why}")
                break
        else:
            if len(seen) > len(expected):
                extra = ", ".join(c.get("name", "?") for c in seen[len(expected) :])
                failures.append(f"order strict: {len(seen) - len(expected)} more calls than expected ({extra})")
    else:
        free = list(range(len(seen)))
        for spec in expected:
            hit = next((i for i in free if spec.matches(seen[i])), None)
            if hit is None:
                failures.append(_closest_miss(spec, seen))
            else:
                free.remove(hit)
        if order == "any" and free and not failures:
            extra = ", ".join(seen[i].get("name", "?") for i in free)
            failures.append(f"order any: unexpected calls ({extra})")
    return CallCheck(not failures, failures)
