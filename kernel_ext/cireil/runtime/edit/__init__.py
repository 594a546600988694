"""The edit matcher: tiers of forgiving search, near windows, re-indentation, batches, diffs and patches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .batch import Outcome, apply_edits
    from .diffs import Change, numbered, unified

__all__ = ["Change", "Outcome", "apply_edits", "numbered", "unified"]

_WHERE = {"Outcome": "batch", "apply_edits": "batch", "Change": "diffs", "numbered": "diffs", "unified": "diffs"}


def __getattr__(name: str) -> Any:
    # Lazy, so that registering the edit tool (its cell parser and previews) does not load the
    # matcher and difflib: they load on the first edit.
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
