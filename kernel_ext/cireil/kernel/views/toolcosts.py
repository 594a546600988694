"""`%cireil tools [--lint]`: the tool table with what each definition costs per request, then the lint."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.display import display

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
