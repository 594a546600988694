"""A tool call's arguments as a person types them -> the arguments dict of the call.

One parser for every surface that takes typed arguments: the `%cireil_<tool>` magics (a line, split
here like a shell would) and `cireil call DIR TOOL ...` (words the shell has already split). The forms,
the last two combinable:

    {"path": "/workspace/a.txt", "content": "hi"}    a JSON object, taken as is
    n=3 tags=["a","b"] path=/workspace               key=value pairs
    /workspace                                       one bare word fills the tool's main argument

A value is JSON when it reads as JSON (`n=3` -> 3, `flag=true` -> True, `tags=["a","b"]` -> list,
`s="3"` -> "3"), first as typed and then with shell quotes removed (`tags='["a", "b"]'` -> list);
otherwise it is the text with shell quotes removed (`path=/workspace` -> "/workspace"). Parameters whose
schema is a plain string keep the text even when it would read as another JSON type, so
`content=42` writes "42" instead of failing validation; a JSON string (`content="a\\nb"`) is still
decoded. Checking types and required fields is the tool's job: only malformed input is refused here,
always as one line (`ArgumentLineError`; the kernel shows it as a UsageError, the CLI as exit 2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.errors import CireilError

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


class ArgumentLineError(CireilError):
    """Typed arguments that cannot be read at all (quotes, JSON, a word too many): one line, what to fix."""


@dataclass(frozen=True)
class Token:
    raw: str  # exactly as typed, quotes included
    text: str  # as a POSIX shell (and shlex.split) would pass it on


def tokenize(line: str) -> list[Token]:
    """Split like `shlex.split(line)`, keeping each word's raw text too (JSON must see its quotes)."""
    tokens: list[Token] = []
    i, n = 0, len(line)
    while i < n:
        if line[i].isspace():
            i += 1
            continue
        start, chars = i, []
        while i < n and not line[i].isspace():
            c = line[i]
            if c == "'":
                end = line.find("'", i + 1)
                if end < 0:
                    raise ArgumentLineError(f"unbalanced quotes: the ' at column {i + 1} is never closed")
                chars.append(line[i + 1 : end])
                i = end + 1
            elif c == '"':
                opened = i
                i += 1
                while True:
                    if i >= n:
                        raise ArgumentLineError(f'unbalanced quotes: the " at column {opened + 1} is never closed')
                    if line[i] == '"':
                        i += 1
                        break
                    if line[i] == "\\" and i + 1 < n and line[i + 1] in '"\\':
                        i += 1
                    chars.append(line[i])
                    i += 1
            elif c == "\\":
                if i + 1 >= n:
                    raise ArgumentLineError("the line ends with a lone backslash")
                chars.append(line[i + 1])
                i += 2
            else:
                chars.append(c)
                i += 1
        tokens.append(Token(line[start:i], "".join(chars)))
    return tokens


def string_params(schema: dict) -> frozenset[str]:
    """Names of the parameters whose schema is a plain string (text is kept as text for them)."""
    props = schema.get("properties", {})
    return frozenset(name for name, spec in props.items() if spec.get("type") == "string")


def _json(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def decode_value(token: Token, *, as_string: bool = False) -> Any:
    """One value: JSON if it reads as JSON (as typed, then unquoted), else the unquoted text."""
    for candidate in (token.raw, token.text):
        ok, value = _json(candidate)
        if ok and (not as_string or isinstance(value, str)):
            return value
    return token.text


def _split_key(token: Token) -> tuple[str, Token] | None:
    """`key=value` when the word starts with a bare parameter name and `=`; None for a bare word."""
    key, eq, _rest = token.raw.partition("=")
    if not eq or not _KEY.fullmatch(key):
        return None
    # a key holds no quote or backslash, so the unquoted text starts with the same `key=` as the raw one
    cut = len(key) + 1
    return key, Token(token.raw[cut:], token.text[cut:])


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON-object form: one object, nothing before or after it."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ArgumentLineError(f"invalid JSON object: {exc}") from None
    if not isinstance(value, dict):  # e.g. `[1, 2]`, or `{"a": 1} x` read as one value
        raise ArgumentLineError(
            'invalid JSON object: the arguments must be one JSON object, e.g. {"path": "/workspace"}'
        )
    return value


def parse_args(
    line: str,
    *,
    main_arg: str | None = None,
    rest_arg: str | None = None,
    strings: Iterable[str] = (),
    tool: str = "this tool",
) -> dict[str, Any]:
    """Parse an argument line as a magic gets it; raises ArgumentLineError (one line) for malformed input only.

    With `rest_arg`, every word after the main argument is one item of that list, as the shell would
    pass it (quotes removed, never decoded, `key=value` included): `%cireil_exec env A=1 ls` runs
    env with ["A=1", "ls"]. Named arguments must then come before the main argument.
    """
    stripped = line.strip()
    if stripped.startswith("{"):
        return parse_json_object(stripped)
    return _from_tokens(tokenize(stripped), main_arg, rest_arg, frozenset(strings), tool)


def parse_argv(
    words: Sequence[str],
    *,
    main_arg: str | None = None,
    rest_arg: str | None = None,
    strings: Iterable[str] = (),
    tool: str = "this tool",
) -> dict[str, Any]:
    """The same forms as `parse_args`, from words a shell has already split and unquoted (`cireil call`).

    Each word is taken as typed inside the magic's line would be once unquoted: `'content=hi there'`
    and `content='hi there'` are both the value "hi there"; `n=3` is 3, and `s='"3"'` is the string "3".
    """
    if words and words[0].lstrip().startswith("{"):
        return parse_json_object(" ".join(words))
    return _from_tokens([Token(word, word) for word in words], main_arg, rest_arg, frozenset(strings), tool)


def _from_tokens(
    tokens: list[Token], main_arg: str | None, rest_arg: str | None, strings: frozenset[str], tool: str
) -> dict[str, Any]:
    args: dict[str, Any] = {}
    bare: Token | None = None
    rest: list[str] | None = None
    for token in tokens:
        if rest is not None:
            rest.append(token.text)
            continue
        pair = _split_key(token)
        if pair is None:
            if main_arg is None:
                raise ArgumentLineError(
                    f"{tool} takes no bare argument ({token.text!r}); give arguments as key=value or a JSON object"
                )
            if bare is not None:
                raise ArgumentLineError(
                    f"two bare arguments ({bare.text!r} and {token.text!r}): only {main_arg} may be given "
                    "without a name; write the others as key=value"
                )
            bare = token
            pair = (main_arg, token)
            if rest_arg is not None:
                rest = []
        key, value = pair
        if key in args:
            raise ArgumentLineError(f"argument {key!r} is given twice")
        args[key] = decode_value(value, as_string=key in strings)
    if rest:
        if rest_arg in args:
            raise ArgumentLineError(f"{rest_arg} is given twice: as {rest_arg}= and as words after {main_arg}")
        args[rest_arg] = rest
    return args
