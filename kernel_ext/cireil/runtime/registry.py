"""The registry of built-in tools: the names the spec defines and the modules that implement them.

Only implemented tools are ever registered; a name the spec defines but this version does not yet
implement is known (so tools.toml may set it to false) and refused when enabled.
"""

from __future__ import annotations

import importlib
from functools import cache

from .tool import Tool

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

# name -> module under cireil.runtime.tools exposing TOOL. Every built-in is provided now; a name the spec
# adds later is known (in BUILTIN_NAMES) before it is implemented, and then it is left out here.
_IMPLEMENTED: dict[str, str] = {name: name.replace("-", "_") for name in BUILTIN_NAMES}


def implemented_names() -> tuple[str, ...]:
    return tuple(n for n in BUILTIN_NAMES if n in _IMPLEMENTED)


@cache
def builtin(name: str) -> Tool:
    module = importlib.import_module(f"{__package__}.tools.{_IMPLEMENTED[name]}")
    tool: Tool = module.TOOL
    assert tool.name == name, f"{module.__name__} defines {tool.name!r}, registered as {name!r}"
    return tool
