"""The argument line of a `%cireil_<tool>` magic -> the arguments dict of the tool call.

The parser is `runtime/toolkit/toolargs.py`, shared with `cireil call` so both take the same forms
(a JSON object, key=value pairs, a bare word for the tool's main argument); here its one-line errors
become IPython UsageErrors, which a cell shows without a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from IPython.core.error import UsageError

from ...runtime.toolkit import toolargs as shared
from ...runtime.toolkit.toolargs import Token, decode_value, string_params

__all__ = ["Token", "decode_value", "parse_args", "string_params", "tokenize"]


def tokenize(line: str) -> list[Token]:
    """Split like `shlex.split(line)`, keeping each word's raw text too; malformed quoting is a UsageError."""
    try:
        return shared.tokenize(line)
    except shared.ArgumentLineError as exc:
        raise UsageError(str(exc)) from None


def parse_args(
    line: str,
    *,
    main_arg: str | None = None,
    rest_arg: str | None = None,
    strings: Iterable[str] = (),
    tool: str = "this tool",
) -> dict[str, Any]:
    """`shared.parse_args`, its errors as one-line UsageErrors."""
    try:
        return shared.parse_args(line, main_arg=main_arg, rest_arg=rest_arg, strings=strings, tool=tool)
    except shared.ArgumentLineError as exc:
        raise UsageError(str(exc)) from None
