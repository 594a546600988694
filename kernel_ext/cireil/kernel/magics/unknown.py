"""A did-you-mean for a mistyped cireil magic (`%cireil_raed`), as everything else in cireil has one.

IPython turns `%name args` into `get_ipython().run_line_magic('name', 'args')` (and a `%%name` cell into
`run_cell_magic`) and, for a name it does not know, says only "Line magic function `%name` not found". One input
transformer, run after IPython's own, reroutes exactly those calls whose name starts with `cireil` and is not a
magic at that moment through `run_line_magic` / `run_cell_magic` below. Nothing else of the user's code is touched:
every other magic, every known cireil magic and all Python go through unchanged, and the rerouted call still runs
the magic when an earlier line of the same cell has created it (`%cireil load DIR` then `%cireil_read ...`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

if TYPE_CHECKING:
    from ...runtime.agent import Agent

PREFIX = "cireil"
_CALL = re.compile(r"get_ipython\(\)\.run_(line|cell)_magic\('(" + PREFIX + r"[A-Za-z0-9_]*)',")
_HERE = f"__import__({__name__!r}, fromlist=['run_line_magic'])"
_INSTALLED: dict[int, UnknownMagics] = {}  # id(shell) -> its transformer (which knows the shell's agent)


class UnknownMagics:
    """The transformer of one shell; `install` / `uninstall` put it in and take it out."""

    def __init__(self, shell: Any, current_agent: Callable[[], Agent | None]) -> None:
        self.shell = shell
        self.current_agent = current_agent

    def __call__(self, lines: list[str]) -> list[str]:
        if not any("run_line_magic('" + PREFIX in line or "run_cell_magic('" + PREFIX in line for line in lines):
            return lines  # the common case: nothing to look at
        return [_CALL.sub(self._reroute, line) for line in lines]

    def _reroute(self, match: re.Match) -> str:
        kind, name = match.group(1), match.group(2)
        if name in self.shell.magics_manager.magics[kind]:
            return match.group(0)
        return f"{_HERE}.run_{kind}_magic({name!r},"

    def install(self) -> None:
        if self not in self.shell.input_transformers_post:
            self.shell.input_transformers_post.append(self)
        _INSTALLED[id(self.shell)] = self

    def uninstall(self) -> None:
        while self in self.shell.input_transformers_post:
            self.shell.input_transformers_post.remove(self)
        if _INSTALLED.get(id(self.shell)) is self:
            del _INSTALLED[id(self.shell)]


def _shell() -> Any:
    from IPython import get_ipython

    return get_ipython()


def run_line_magic(name: str, line: str) -> Any:
    """`%name line` as IPython would run it, or a UsageError that names the nearest cireil magic."""
    shell = _shell()
    if shell.find_line_magic(name) is not None:  # created by an earlier line of this cell
        return shell.run_line_magic(name, line, _stack_depth=2)
    raise UsageError(not_found(shell, name, "line"))


def run_cell_magic(name: str, line: str, cell: str) -> Any:
    shell = _shell()
    if shell.find_cell_magic(name) is not None:
        return shell.run_cell_magic(name, line, cell)
    raise UsageError(not_found(shell, name, "cell"))


def not_found(shell: Any, name: str, kind: str) -> str:
    """IPython's own message, then what cireil knows: the nearest magic, a tool that is off, or no agent."""
    from ...runtime.base.didyoumean import did_you_mean
    from ...runtime.toolkit.registry import BUILTIN_NAMES

    sign = "%" if kind == "line" else "%%"
    text = f"{kind.capitalize()} magic function `{sign}{name}` not found"
    if name == PREFIX and kind == "cell":
        return f"{text}: %cireil is a line magic (%cireil help lists its subcommands)"
    installed = _INSTALLED.get(id(shell))
    agent = installed.current_agent() if installed is not None else None
    tool = name.removeprefix(PREFIX + "_").replace("_", "-")
    if tool in BUILTIN_NAMES:  # a real tool's magic: no agent yet, or the agent has the tool off
        if agent is None:
            return f"{text}: tool magics exist once an agent is loaded (%cireil load DIR, or %cireil load --demo)"
        if tool not in {t.name for t in agent.tools}:
            return f"{text}: tool '{tool}' is not enabled in config/tools.toml (add `{tool} = true`)"
    known = [n for n in shell.magics_manager.magics[kind] if n.startswith(PREFIX)]
    close = did_you_mean(name, known)
    if close is not None:
        return f"{text} (did you mean {sign}{close}?)"
    if agent is None and did_you_mean(tool, BUILTIN_NAMES):
        return f"{text}: tool magics exist once an agent is loaded (%cireil load DIR, or %cireil load --demo)"
    return f"{text} (%cireil tools lists the tool magics, %cireil help the subcommands)"
