"""`%cireil tools [--lint]`: the tool table with what each definition costs per request, then the lint;
`%cireil tools --diff-original`: how the definitions differ from the original CireilClaw's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.display import display

from ...render import tooldiff
from .base import View
from .panels import ToolTable

if TYPE_CHECKING:
    from ...runtime.agent import Agent


def show_tools(agent: Agent, refused: dict[str, str], *, lint: bool = False, builtins: bool = False) -> None:
    """The tool table; with `lint`, the definition lint under it (about built-in tools only with `builtins`)."""
    from ...runtime.engine.toolcost import tool_costs

    tools = agent.tools
    costs = tool_costs(tools)
    display(ToolTable(agent.slug, tools, refused, costs))
    if lint:
        from ...runtime.engine.toollint import lint_tools, split_builtin
        from .lint import LintView

        findings = lint_tools(tools, costs)
        own, builtin = split_builtin(findings, tools)
        display(LintView(agent.slug, findings) if builtins else LintView(agent.slug, own, len(builtin)))


@dataclass
class OriginalDiffView(View):
    """The report of runtime/toolkit/original_diff.py, rendered as `cireil tools --diff-original` prints it."""

    report: dict[str, Any]

    def text(self) -> str:
        return tooldiff.text(self.report)

    def html(self) -> str:
        return tooldiff.html(self.report)


def show_original_diff(agent: Agent) -> None:
    from ...runtime.toolkit.original_diff import differences

    display(OriginalDiffView(differences(agent.tools)))
