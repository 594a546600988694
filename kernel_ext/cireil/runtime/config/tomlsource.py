"""A parsed TOML file that can say on which line a key was written.

tomllib parses but forgets positions; error messages must name the line. This keeps the text and
scans it once for key definitions, tracking `[table]` / `[[array]]` headers and skipping the insides
of multi-line strings and arrays, so `line_of("exec", "timeout")` answers what an editor shows.
Keys written inside inline tables are located at their parent key's line.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base.errors import ConfigIssue
from ..files import safefs

_BARE = r"[A-Za-z0-9_-]+"
# possessive: a megabyte-long string is one linear scan, not a backtracking stack of a million frames
_BASIC = r'"(?:[^"\\\n]++|\\.)*+"'
_LITERAL = r"'[^'\n]*+'"
_KEY_PART = rf"(?:{_BARE}|{_BASIC}|{_LITERAL})"
_DOTTED = rf"{_KEY_PART}(?:\s*\.\s*{_KEY_PART})*"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED})\s*\]\]?")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=")
_PARTS = re.compile(_KEY_PART)
_BASIC_AT = re.compile(_BASIC)
_LITERAL_AT = re.compile(_LITERAL)


def _split_key(dotted: str) -> tuple[str, ...]:
    parts = []
    for match in _PARTS.finditer(dotted):
        part = match.group(0)
        if part[0] == '"':
            # a basic string: let the TOML parser itself decode its escapes (non-ASCII stays intact)
            try:
                part = tomllib.loads(f"k = {part}")["k"] if "\\" in part else part[1:-1]
            except tomllib.TOMLDecodeError:
                part = part[1:-1]
        elif part[0] == "'":
            part = part[1:-1]
        parts.append(part)
    return tuple(parts)


def _value_state(rest: str, depth: int, in_string: str | None) -> tuple[int, str | None]:
    """Advance bracket depth and multi-line-string state over one line of a value."""
    i = 0
    while i < len(rest):
        if in_string:
            end = rest.find(in_string, i)
            if end < 0:
                return depth, in_string
            i = end + 3
            in_string = None
            continue
        ch = rest[i]
        if rest.startswith('"""', i) or rest.startswith("'''", i):
            in_string = rest[i : i + 3]
            i += 3
        elif ch == '"':
            m = _BASIC_AT.match(rest, i)  # matched in place: slicing the line at every string is quadratic
            i = m.end() if m else len(rest)
        elif ch == "'":
            m = _LITERAL_AT.match(rest, i)
            i = m.end() if m else len(rest)
        elif ch == "#":
            break
        elif ch in "[{":
            depth += 1
            i += 1
        elif ch in "]}":
            depth = max(0, depth - 1)
            i += 1
        else:
            i += 1
    return depth, in_string


@dataclass
class TomlSource:
    """One configuration file: its path relative to the agent, its text, its data and key lines."""

    rel: str
    text: str
    data: dict[str, Any]
    lines: dict[tuple, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, rel: str, text: str) -> TomlSource:
        """Parse text; raises ConfigError-ready `ConfigIssue` via TomlSyntaxError on bad TOML."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise TomlSyntaxError.from_decode(rel, exc, text) from None
        except RecursionError:  # tomllib recurses once per nested array or inline table
            raise TomlSyntaxError(ConfigIssue(rel, deep_line(text), f"invalid TOML: {TOO_DEEP}")) from None
        except ValueError:  # tomllib lets int() refuse a number of thousands of digits
            issue = ConfigIssue(rel, long_number_line(text), f"invalid TOML: {TOO_LONG_NUMBER}")
            raise TomlSyntaxError(issue) from None
        source = cls(rel, text, data)
        source._index()
        return source

    def _index(self) -> None:
        table: tuple = ()
        array_counts: dict[tuple, int] = {}
        depth, in_string = 0, None
        for number, line in enumerate(self.text.splitlines(), start=1):
            if depth or in_string:
                depth, in_string = _value_state(line, depth, in_string)
                continue
            header = _HEADER.match(line)
            if header:
                path = _split_key(header.group(2))
                for size in range(1, len(path)):  # `[a.b.c]` also defines a and a.b (implicitly) here
                    self.lines.setdefault(path[:size], number)
                if header.group(1) == "[[":
                    index = array_counts.get(path, -1) + 1
                    array_counts[path] = index
                    table = (*path, index)
                    self.lines.setdefault(path, number)  # the array itself: where it starts
                else:
                    table = path
                self.lines.setdefault(table, number)
                continue
            assign = _ASSIGN.match(line)
            if assign:
                key = (*table, *_split_key(assign.group(1)))
                for size in range(len(table) + 1, len(key) + 1):  # `a.b = 1` defines a here too
                    self.lines.setdefault(key[:size], number)
                depth, in_string = _value_state(line[assign.end() :], 0, None)

    def line_of(self, *path: str | int) -> int | None:
        """The line where `path` (or its nearest written ancestor) is defined, or None."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def first_line_within(self, *path: str | int) -> int | None:
        """The line of `path`, or else of the first key written inside it: a table written only through
        its subtables (`[a.b]` without `[a]`) is found at its first one."""
        line = self.line_of(*path)
        prefix = path
        while line is None and prefix:
            lines = [n for key, n in self.lines.items() if key[: len(prefix)] == prefix]
            line = min(lines) if lines else None
            prefix = prefix[:-1]
        return line

    def issue(self, path: tuple, message: str, severity: str = "error") -> ConfigIssue:
        key = ".".join(str(p) for p in path) if path else None
        return ConfigIssue(self.rel, self.first_line_within(*path), message, key=key, severity=severity)


TOO_DEEP = "arrays or inline tables nested too deeply to read"
_DEEP_LIMIT = 100


def deep_line(text: str) -> int | None:
    """The line where brackets first nest past `_DEEP_LIMIT` levels (strings are not told apart: a hint only)."""
    depth = 0
    for number, line in enumerate(text.splitlines(), start=1):
        for ch in line:
            if ch in "[{":
                depth += 1
                if depth > _DEEP_LIMIT:
                    return number
            elif ch in "]}":
                depth = max(0, depth - 1)
    return None


TOO_LONG_NUMBER = "a number too long to read (an integer is at most 64 bits, about 19 digits)"
_LONG_DIGITS = re.compile(r"[0-9_]{1000}")


def long_number_line(text: str) -> int | None:
    """The line of the first run of a thousand digits (a hint: strings are not told apart)."""
    match = _LONG_DIGITS.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else None


class TomlSyntaxError(Exception):
    """The file is not TOML at all; carries the one issue to report."""

    def __init__(self, issue: ConfigIssue) -> None:
        self.issue = issue
        super().__init__(str(issue))

    @classmethod
    def from_decode(cls, rel: str, exc: tomllib.TOMLDecodeError, text: str = "") -> TomlSyntaxError:
        message = str(exc)
        line = getattr(exc, "lineno", None)
        if line is None:
            m = re.search(r"line (\d+)", message)
            line = int(m.group(1)) if m else None
        if line is None and message.endswith("(at end of document)"):
            # e.g. an unterminated string or array: the document ends where the problem shows
            line = max(1, len(text.splitlines()))
            message = message[: -len("(at end of document)")].rstrip() + " at end of file"
        message = getattr(exc, "msg", None) or re.sub(r"\s*\(at line.*\)$", "", message)
        return cls(ConfigIssue(rel, line, f"invalid TOML: {message}"))


_MAKE_IT_A_FILE = "it is not read: replace it with a TOML file, or remove it"


def _kind(path: Path) -> str:
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return "it cannot be examined"
    if stat.S_ISDIR(mode):
        return "it is a directory"
    if stat.S_ISFIFO(mode):
        return "it is a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "it is a device" + (" (a symlink to one)" if path.is_symlink() else "")
    if stat.S_ISSOCK(mode):
        return "it is a socket"
    return "it is not a plain file"


def read_config_bytes(agent_dir: Path, rel: str) -> bytes | None:
    """The bytes of `rel` under the agent directory; None when it does not exist.

    Anything else that is not a readable regular file of sane size is a TomlSyntaxError naming the
    file: a directory or FIFO planted under that name never hangs or crashes a load.
    """
    try:
        return safefs.read_host_file(agent_dir / rel)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        problem = f"not a regular file (it is a directory); {_MAKE_IT_A_FILE}"
    except safefs.NotRegularFile:
        problem = f"not a regular file ({_kind(agent_dir / rel)}); {_MAKE_IT_A_FILE}"
    except safefs.FileTooLarge:
        problem = (
            f"file is larger than {safefs.CONFIG_LIMIT} bytes, too large for a configuration file; "
            "it is not read: shorten it"
        )
    except OSError as exc:
        problem = f"cannot be read: {exc.strerror or exc}"
    raise TomlSyntaxError(ConfigIssue(rel, None, problem))


def read_toml(agent_dir: Path, rel: str) -> TomlSource | None:
    """Read `rel` under the agent directory; None when the file does not exist."""
    raw = read_config_bytes(agent_dir, rel)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TomlSyntaxError(ConfigIssue(rel, line, "file is not valid UTF-8")) from None
    return TomlSource.parse(rel, text)
