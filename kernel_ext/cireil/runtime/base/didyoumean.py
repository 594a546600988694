"""The one "did you mean" of cireil: config files, scenario files, subcommands and tool parameters all
suggest a mistyped name the same way."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(name: str, options: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The option closest to a mistyped `name`, or None when none is close."""
    import difflib  # only for a mistyped name: never imported on a clean load

    close = difflib.get_close_matches(name, list(options), n=1, cutoff=cutoff)
    return close[0] if close else None


def suggestion(name: str, options: Iterable[str], *, cutoff: float = 0.6) -> str:
    """` (did you mean 'X'?)` for a mistyped name, or nothing."""
    close = did_you_mean(name, options, cutoff=cutoff)
    return f" (did you mean '{close}'?)" if close else ""
