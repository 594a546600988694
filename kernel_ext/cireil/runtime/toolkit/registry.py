"""The registry of built-in tools: the names the spec defines, each implemented by the module named like it.

A new built-in is its module under `cireil.runtime.tools` (exposing TOOL) plus its name here: magics,
forms, the CLI and the engine come from the registry, and the tool's own declarations (`Tool.path_effect`,
`ends_turn`, `breakable`, `always_granted`) tell the engine and the grant check how to treat it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import replace
from functools import cache

from .tool import PathEffect, Tool, python_name

BUILTIN_NAMES: tuple[str, ...] = (
    "respond",
    "no-response",
    "edit",
    "read",
    "read-sections",
    "open-file",
    "close-file",
    "read-skill",
    "list-dir",
    "write",
    "exec",
    "read-history",
    "read-session",
    "list-sessions",
    "query-sessions",
    "download-attachments",
    "react",
    "schedule",
    "invoke",
    "session-info",
    "prune-boundaries",
)

# Sessions written before 2.0 still hold results of a tool that no longer exists and so cannot declare itself.
_RETIRED_PATH_EFFECTS: dict[str, PathEffect] = {"str-replace": "changes"}


@cache
def builtin(name: str) -> Tool:
    if name not in BUILTIN_NAMES:
        raise KeyError(name)
    module = importlib.import_module(f"cireil.runtime.tools.{python_name(name)}")
    tool: Tool = module.TOOL
    assert tool.name == name, f"{module.__name__} defines {tool.name!r}, registered as {name!r}"
    return tool


def overriding(tool: Tool) -> Tool:
    """A plugin's replacement of a built-in, keeping the declarations it does not make itself: a replacement
    respond still ends the turn (the original runtime keys this on the name)."""
    original = builtin(tool.name)
    return replace(
        tool,
        path_effect=tool.path_effect or original.path_effect,
        ends_turn=tool.ends_turn or original.ends_turn,
        breakable=tool.breakable and original.breakable,
        always_granted=tool.always_granted or original.always_granted,
    )


def path_effects(tools: Iterable[Tool] = ()) -> dict[str, PathEffect]:
    """Tool name -> what its calls do to files, for every built-in (enabled or not: a session keeps results of
    tools switched off since) and the given tools (Python, plugin, MCP)."""
    effects = {**_RETIRED_PATH_EFFECTS, **_builtin_path_effects(BUILTIN_NAMES)}
    effects.update((tool.name, tool.path_effect) for tool in tools if tool.path_effect)
    return effects


@cache
def _builtin_path_effects(names: tuple[str, ...]) -> dict[str, PathEffect]:
    return {name: builtin(name).path_effect for name in names if builtin(name).path_effect}


def turn_enders() -> tuple[str, ...]:
    """The built-ins whose calls end the turn (respond, no-response), as they declare it: what an eval scenario
    may name as the turn's end, and the plumbing its call checks leave out unless named."""
    return _turn_enders(BUILTIN_NAMES)


@cache
def _turn_enders(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in names if builtin(name).ends_turn)
