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


def show_tools(agent: Agent, refused: dict[str, str], *, lint: bool = False) -> None:
    from ...runtime.engine.toolcost import tool_costs

    tools = agent.tools
    costs = tool_costs(tools)
    display(ToolTable(agent.slug, tools, refused, costs))
    if lint:
        from ...runtime.engine.toollint import lint_tools
        from .lint import LintView

        display(LintView(agent.slug, lint_tools(tools, costs)))


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
