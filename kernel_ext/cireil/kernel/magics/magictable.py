"""Adding and removing magics in a shell without ever touching one that is not ours.

IPython has `register_function` but no way back, so removal edits the same tables it fills. A name
counts as taken when the magics table has it (real, alias or lazily declared) or when it is
declared lazy in configuration and not loaded yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

KINDS = ("line", "cell")


def owner(shell: Any, name: str, kind: str) -> Any | None:
    """What currently answers to `%name` (kind "line") or `%%name` (kind "cell"), without loading it."""
    manager = shell.magics_manager
    found = manager.magics[kind].get(name)
    if found is None and kind == "line":
        found = getattr(manager, "lazy_magics", {}).get(name)
    return found


def clash(shell: Any, name: str, kinds: tuple[str, ...], ours: Callable | None = None) -> str | None:
    """A description of the magic already using `name`, unless it is absent or is `ours`."""
    for kind in kinds:
        found = owner(shell, name, kind)
        if found is not None and found is not ours:
            return f"{'%' if kind == 'line' else '%%'}{name}"
    return None


def add(shell: Any, name: str, fn: Callable, *, cell: bool) -> None:
    shell.magics_manager.register_function(fn, magic_kind="line_cell" if cell else "line", magic_name=name)


def remove(shell: Any, name: str, fn: Callable) -> None:
    """Remove `name` where it still is `fn`; whatever replaced it since then stays."""
    manager = shell.magics_manager
    for kind in KINDS:
        if manager.magics[kind].get(name) is fn:
            del manager.magics[kind][name]
    if getattr(manager.user_magics, name, None) is fn:
        delattr(manager.user_magics, name)
