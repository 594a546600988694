"""The one checker every TOML configuration file goes through: unknown keys, types, bounds, did-you-mean.

A file's tables are declared with runtime/base/params.py's fields (the same declarations that validate tool
arguments), and every problem becomes a `FILE:LINE: message` issue phrased one way:

    unknown key 'KEY' [in [TABLE]] (did you mean 'CLOSE'?)      or  (expected: a, b, c)
    'LABEL' must be EXPECTED, not VALUE [(did you mean 'CLOSE'?)]   (the hint for a mistyped choice)
    'LABEL' is required
    'LABEL' CHECK-MESSAGE                                        (a field's own check, for what types cannot say)

LABEL is the key's full path as TOML writes it (`exec.timeout`, `servers.docs.url`, `mounts[0].mode`,
`local.models."gpt-4o".reasoning`), so a message names what to change without the file open. Problems
are collected, never raised: a caller reports every one at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..base import params
from ..base.didyoumean import suggestion
from ..base.errors import ConfigIssue
from .tomlsource import TomlSource

_BARE = re.compile(r"[A-Za-z0-9_-]+")
MAX_UNKNOWN = 50  # unknown keys listed one by one in a file; the rest are counted in one issue
# An HTTP header name (RFC 9110 token): checked for custom headers of engine.toml and mcp.toml alike.
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def header_name_ok(name: str) -> bool:
    return bool(_HEADER_NAME.match(name))


def label(*path: str | int) -> str:
    """A key's path as TOML writes it: dotted, quoted where needed, array entries as [index]."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = part if _BARE.fullmatch(part) else '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out += f".{text}" if out else text
    return out


def toml_repr(value: Any) -> str:
    """A value as the file would write it; tables and arrays only by kind (they may be huge)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return params.describe_value(value)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, int) and abs(value) >= 10**30:
        return "a number of more than 30 digits"
    return repr(value)


def unknown_key(key: str, known: Sequence[str], where: tuple = (), *, hint: str | None = None) -> str:
    """The one phrasing of an unknown key; `hint` replaces the did-you-mean for a key with a known story."""
    table = "" if not where else f" in {label(*where)}" if isinstance(where[-1], int) else f" in [{label(*where)}]"
    if hint is None:
        hint = suggestion(key, known) or (f" (expected: {', '.join(known)})" if known else " (expected: no keys)")
    return f"unknown key '{key}'{table}{hint}"


def expectation(spec: params.Field) -> str:
    """What a field accepts, in words: "a whole number of milliseconds >= 1000", "one of 'a', 'b'"."""
    if isinstance(spec, params.AnyOf):
        return spec.description or " or ".join(expectation(o) for o in spec.options)
    if isinstance(spec, params.Number):
        base = spec.description or ("a whole number" if spec.integer else "a number")
        low, high = spec.minimum, spec.maximum
        if low is not None and high is not None:
            return f"{base} from {low:g} to {high:g}"
        if low is not None:
            return f"{base} >= {low:g}"
        return f"{base} <= {high:g}" if high is not None else base
    if spec.description:
        return spec.description
    if isinstance(spec, params.Boolean):
        return "true or false"
    if isinstance(spec, params.String):
        if spec.enum is not None:
            return "one of " + ", ".join(f"'{e}'" for e in spec.enum)
        return "a non-empty string" if spec.min_length else "a string"
    if isinstance(spec, params.Array):
        return "an array"
    return "a table"


def _float_for_integer(value: Any, spec: params.Field) -> bool:
    """A TOML float where the field takes only whole numbers (booleans are refused by params already)."""
    if isinstance(value, list) and isinstance(spec, params.Array) and spec.items is not None:
        return any(_float_for_integer(item, spec.items) for item in value[:10_000])
    if not isinstance(value, float) or not value.is_integer():
        return False  # 1.5 is refused as any wrong value is; only a whole float passes params and needs this
    if isinstance(spec, params.Number):
        return spec.integer
    if isinstance(spec, params.AnyOf):
        numbers = [o for o in spec.options if isinstance(o, params.Number)]
        return bool(numbers) and all(o.integer for o in numbers)
    return False


class Checker:
    """The issues of one file. `prefix` leads every message (original/unhonoured.py: what the original refuses)."""

    def __init__(
        self, source: TomlSource, issues: list[ConfigIssue] | None = None, *, severity: str = "error", prefix: str = ""
    ) -> None:
        self.source = source
        self.issues = [] if issues is None else issues
        self.severity = severity
        self.prefix = prefix
        self._unknown = 0  # unknown keys met so far
        self._summary: int | None = None  # where the issue counting those past MAX_UNKNOWN is

    def fail(self, path: tuple, message: str, severity: str | None = None) -> None:
        self.issues.append(self.source.issue(path, self.prefix + message, severity or self.severity))

    def warn(self, path: tuple, message: str) -> None:
        self.fail(path, message, "warning")

    def unknown(self, table: Mapping, known: Sequence[str], where: tuple = (), **hints: str) -> list[str]:
        """An issue for each key of `table` not in `known`; the unknown keys. `hints`: key -> its own hint."""
        found = [key for key in table if key not in known]
        for key in found:
            self.unknown_issue((*where, key), lambda k=key: unknown_key(k, known, where, hint=hints.get(k)))
        return found

    def unknown_issue(self, path: tuple, message: Callable[[], str]) -> None:
        """One unknown key: the first MAX_UNKNOWN of a file are listed (with their did-you-mean), the rest
        counted in one issue, so that a file of a hundred thousand stray keys is read in linear time and
        reported in a screenful."""
        self._unknown += 1
        if self._unknown <= MAX_UNKNOWN:
            self.fail(path, message())
            return
        more = self._unknown - MAX_UNKNOWN
        text = f"{more} more unknown key{'s' if more > 1 else ''} after the first {MAX_UNKNOWN} (not listed)"
        if self._summary is None:
            self._summary = len(self.issues)
            self.fail(path, text)
        else:
            self.issues[self._summary] = replace(self.issues[self._summary], message=self.prefix + text)

    def value(self, path: tuple, value: Any, spec: params.Field) -> tuple[bool, Any]:
        """(ok, the clean value) for one present key."""
        if _float_for_integer(value, spec):
            # params takes 5.0 for an integer (JSON tool arguments cannot tell them apart); TOML can, and
            # the spec's integer keys are integers: `1e9` or `1.0` is refused, never rounded into a limit.
            # cireil's rule, not the original's (its JavaScript numbers take 1.0 as 1): no `prefix` saying so
            message = (
                f"'{label(*path)}' must be {expectation(spec)} written without a decimal point "
                f"or exponent (a TOML integer), not {toml_repr(value)}"
            )
            self.issues.append(self.source.issue(path, message, self.severity))
            return False, None
        clean, problems = spec.validate(value, path)
        if not problems:
            return True, clean
        shown = label(*path)
        if spec.check is not None and not replace(spec, check=None).validate(value, path)[1]:
            self.fail(path, f"'{shown}' {problems[0].message}")  # the type held; the field's own check did not
        else:
            choice = isinstance(spec, params.String) and spec.enum and isinstance(value, str)
            close = suggestion(value, spec.enum) if choice else ""
            self.fail(path, f"'{shown}' must be {expectation(spec)}, not {toml_repr(value)}{close}")
        return False, None

    def table(
        self, where: tuple, value: Any, fields: Mapping[str, params.Field], **hints: str
    ) -> dict[str, Any] | None:
        """The clean values of a table declared by `fields` (defaults for absent keys that have one);
        None when `value` is not a table. Keys with problems are left out (`errors_since` tells)."""
        if not isinstance(value, Mapping):
            self.fail(where, f"'{label(*where)}' must be a table, not {toml_repr(value)}")
            return None
        self.unknown(value, list(fields), where, **hints)
        clean: dict[str, Any] = {}
        for key, spec in fields.items():
            path = (*where, key)
            if key not in value:
                if spec.has_default:
                    clean[key] = spec.default
                elif spec.is_required:
                    self.fail(path, f"'{label(*path)}' is required")
                continue
            ok, item = self.value(path, value[key], spec)
            if ok:
                clean[key] = item
        return clean

    def mark(self) -> int:
        """Where the issues stand now: `errors_since(mark)` tells whether a part added any."""
        return len(self.issues)

    def errors_since(self, mark: int) -> bool:
        return any(i.severity == "error" for i in self.issues[mark:])
