"""One `%cireil_<tool>` magic per enabled tool, kept in step with the agent's tools.toml.

The set is re-synced whenever `agent.generation` moves (the enabled set changed) or another agent is
loaded. A name some other magic already uses is refused with a message, never replaced.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import no_var_expand

from ...runtime.base.didyoumean import suggestion
from ...runtime.base.errors import CireilError
from ...runtime.toolkit.tool import describe_parameters
from ..views.live import call_live
from ..views.panels import ArgumentHelp, magic_usage
from . import magictable
from .toolargs import parse_args, string_params

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.toolkit.result import ToolResult
    from ...runtime.toolkit.tool import Tool


@dataclass(frozen=True)
class _Registered:
    tool: Tool
    fn: Callable[..., Any]


def usage_doc(tool: Tool) -> str:
    """The docstring `%cireil_<tool>?` shows: forms of the call, the description, the parameters."""
    main = f" {tool.main_arg.upper()}" if tool.main_arg else ""
    words = f"{main} [key=value ...]"
    if tool.rest_arg:  # every word after the main argument belongs to the list, so named ones go first
        words = f" [key=value ...]{main} [{tool.rest_arg.upper()} ...]"
    lines = [f"%{tool.magic_name}{words}   or   %{tool.magic_name} {{JSON object}}"]
    if tool.body_arg:
        cell = f"%%{tool.magic_name}{words}" if tool.rest_arg else f"{magic_usage(tool)} [key=value ...]"
        lines.append(f"{cell}   with the cell body as `{tool.body_arg}`")
    if tool.parse_body is not None and tool.parse_body.__doc__:
        lines.append(f"%%{tool.magic_name} ...   with a cell body: {tool.parse_body.__doc__.strip()}")
    lines += ["", tool.description, "", "Parameters:"]
    lines += [f"  {line}" for line in describe_parameters(tool.parameters)]
    return "\n".join(lines)


def _issue_text(issue: dict, known: list[str]) -> str:
    where, message = issue.get("path") or "", str(issue.get("message", ""))
    if message.startswith("Invalid key: Expected") and message.endswith("but received undefined"):
        return f"{where} is missing"
    if message.startswith("Invalid key: unknown parameter") and "." not in where:
        return f"unknown parameter {where!r}{suggestion(where, known)}"
    return f"{where}: {message}" if where else message


def argument_help(tool: Tool, data: dict) -> ArgumentHelp:
    """A magic called with missing or wrong arguments: what is wrong in plain words, how the magic is
    written and its parameters (`data` holds the validator's `issues`, as a failed call's result would)."""
    known = list(tool.parameters.get("properties", {}))
    problems = "; ".join(_issue_text(i, known) for i in data.get("issues", ()) if isinstance(i, dict))
    usage = usage_doc(tool).split("\n\n", 1)[0]  # the forms of the call, without the description
    return ArgumentHelp(
        f"%{tool.magic_name}: {problems or data.get('error', 'invalid arguments')}",
        usage.splitlines(),
        describe_parameters(tool.parameters),
    )


class ToolMagics:
    """The tool magics of one shell."""

    def __init__(self, shell: Any, current_agent: Callable[[], Agent | None]) -> None:
        self._shell = shell
        self._agent = current_agent
        self._registered: dict[str, _Registered] = {}  # magic name -> what we put there
        self.refused: dict[str, str] = {}  # tool name -> the magic that already had its name
        self._synced: tuple[Agent | None, int] = (None, -1)

    @property
    def names(self) -> list[str]:
        return list(self._registered)

    def sync(self) -> None:
        """Make the registered magics match the enabled tools; cheap when nothing changed."""
        agent = self._agent()
        tools: list[Tool] = []
        generation = -1
        if agent is not None:
            tools = agent.tools  # a stat per config file; re-reads tools.toml only when it changed
            generation = agent.generation
        if self._synced[0] is agent and self._synced[1] == generation:
            return
        wanted = {tool.magic_name: tool for tool in tools}
        for name, entry in list(self._registered.items()):
            tool = wanted.get(name)
            if tool is not entry.tool:  # disabled, or another agent's tool of the same name
                magictable.remove(self._shell, name, entry.fn)
                del self._registered[name]
        refused: dict[str, str] = {}
        for name, tool in wanted.items():
            if name in self._registered:
                continue
            cell = tool.body_arg is not None or tool.parse_body is not None
            taken = magictable.clash(self._shell, name, ("line", "cell") if cell else ("line",))
            if taken is not None:
                if self.refused.get(tool.name) != taken:  # say it once, not at every sync
                    print(
                        f"cireil: tool '{tool.name}' gets no magic: {taken} already exists and cireil never "
                        f"replaces a magic; use `%cireil ui {tool.name}` to call it",
                        file=sys.stderr,
                    )
                refused[tool.name] = taken
                continue
            fn = self._make(tool)
            magictable.add(self._shell, name, fn, cell=cell)
            self._registered[name] = _Registered(tool, fn)
        self.refused = refused
        self._synced = (agent, generation)

    def clear(self) -> None:
        for name, entry in self._registered.items():
            magictable.remove(self._shell, name, entry.fn)
        self._registered.clear()
        self.refused.clear()
        self._synced = (None, -1)

    def _make(self, tool: Tool) -> Callable[..., Any]:
        def magic(line: str, cell: str | None = None) -> ToolResult:
            return self.call(tool, line, cell)

        magic.__name__ = magic.__qualname__ = tool.magic_name
        magic.__doc__ = usage_doc(tool)
        return no_var_expand(magic)  # `$` and `{}` are the tool's business, not the namespace's

    def call(self, tool: Tool, line: str, body: str | None) -> ToolResult:
        agent = self._agent()
        if agent is None:
            raise UsageError("no agent is loaded: run `%cireil load DIR` first")
        if body is not None and tool.parse_body is not None:  # the tool reads its own cell syntax
            try:
                args = tool.parse_body(line, body)
            except ValueError as exc:
                raise UsageError(f"%%{tool.magic_name}: {exc}") from None
        else:
            args = parse_args(
                line,
                main_arg=tool.main_arg,
                rest_arg=tool.rest_arg,
                strings=string_params(tool.parameters),
                tool=tool.magic_name,
            )
        if body is not None and tool.body_arg is not None and tool.parse_body is None:
            if tool.body_arg in args:
                raise UsageError(f"{tool.body_arg} is given twice: in the magic's line and as the cell body")
            args[tool.body_arg] = body
        self._check_arguments(tool, args)
        try:
            result = call_live(agent, tool.name, args)  # agent.call, with exec's output streaming in live
        except CireilError as exc:
            raise UsageError(str(exc)) from None
        finally:
            # the call re-read tools.toml; follow it so the next cell sees the right magics
            self.sync_quietly()
        return result

    def _check_arguments(self, tool: Tool, args: dict) -> None:
        """Missing or wrong arguments stop the magic before the tool runs: the usage is shown and the cell
        fails as any other usage error does (so Run All stops there), instead of a second, cryptic error
        from the tool's own validation below it. The check is the one the call itself would make."""
        prepared = tool.prepare(args) if tool.prepare is not None else args
        _clean, issues = tool.params.validate(prepared)
        if not issues:
            return
        from IPython.display import display

        display(argument_help(tool, {"issues": [i.as_dict() for i in issues], "error": str(issues[0])}))
        raise UsageError(f"%{tool.magic_name} was not called: fix its arguments as shown above")

    def sync_quietly(self) -> None:
        """sync() for hooks and cleanup paths: a failure here must not mask the cell's own outcome."""
        try:
            self.sync()
        except Exception as exc:  # never let bookkeeping break a cell
            print(f"cireil: could not update the tool magics: {exc}", file=sys.stderr)
