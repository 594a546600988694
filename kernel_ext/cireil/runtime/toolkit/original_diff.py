"""Every way the tools cireil offers a model differ from the original CireilClaw's, each with the spec rule that
causes it: `cireil tools --diff-original` and `%cireil tools --diff-original` (issue 28).

The built-ins declare their own differences (`Tool.spec_differences`); what cannot declare itself is here: the
original's built-ins cireil does not have, and tools that are not built-ins at all (MCP, plugins, Python).
Everything not listed is the original's definition byte for byte; tests/peer/test_tool_definitions.py runs the
original's own code to hold both halves of that sentence true.
"""

from __future__ import annotations

from collections.abc import Iterable

from .registry import BUILTIN_NAMES, builtin
from .tool import SpecDifference, Tool

# The original's built-ins that cireil does not have, with the rule that removes them.
ORIGINAL_ONLY: dict[str, SpecDifference] = {
    "str-replace": SpecDifference(
        "tool",
        "a built-in cireil does not have: tools.toml's str-replace enables edit instead (the spec's migration)",
        'spec "Built-in tools": "CireilClaw 2.0.0 removes str-replace and migrates existing tool configuration to '
        'edit" (reference §10 #1)',
    ),
}

MCP = SpecDifference(
    "tool",
    "a tool of an MCP server in mcp.toml: the original has no MCP client",
    'spec "HTTP MCP tools" (reference §10 #14)',
)
PLUGIN = SpecDifference(
    "tool",
    "a plugin tool: cireil's plugins are Python, the original's JavaScript, so its definition is not compared",
    'spec "Plugins": plugin tools are enabled by name in tools.toml',
)
PYTHON = SpecDifference(
    "tool",
    "defined in Python for this notebook (cireil.load(tools=...)), not part of the agent directory",
    "none: not an agent tool, the original never sees it",
)

SIDES = ("both", "cireil only", "original only")


def _row(tool: str, side: str, difference: SpecDifference, enabled: bool | None, on: dict | None = None) -> dict:
    return {"tool": tool, "side": side, **difference.as_dict(), "enabled": enabled, "applies": _applies(difference, on)}


def _applies(difference: SpecDifference, on: dict | None) -> bool | None:
    """Whether a conditional difference shows in this agent (None: no agent, or no condition). A condition is
    `<tool> = false`: the difference shows while that tool is disabled."""
    if on is None or not difference.when:
        return None
    tool, _, value = difference.when.partition(" = ")
    if value != "false":
        raise ValueError(f"unknown condition {difference.when!r}: only '<tool> = false' is known")
    return tool not in on


def _extra(tool: Tool) -> SpecDifference:
    if tool.origin.startswith("mcp:"):
        return MCP
    if tool.origin.startswith("plugin:"):
        return PLUGIN
    return PYTHON


def differences(enabled: Iterable[Tool] | None = None) -> dict:
    """The report: one row per difference. `enabled` is an agent's enabled tools (rows then say whether each tool
    is enabled there, and its MCP, plugin and Python tools are listed by name); None lists the built-ins alone,
    with one row standing for every MCP tool.

    A row: {tool, side ("both" | "cireil only" | "original only"), where, what, rule, when, enabled, applies};
    `applies` says whether a conditional row (`when`) shows in this agent (None: unconditional, or no agent).
    """
    tools = list(enabled) if enabled is not None else None
    on = {t.name: t for t in tools} if tools is not None else None
    rows: list[dict] = []
    for name in BUILTIN_NAMES:
        replaced = on is not None and name in on and on[name].origin != "built-in"
        if replaced:  # a plugin's own tool under a built-in's name: its definition is the plugin's
            continue
        for difference in builtin(name).spec_differences:
            side = "cireil only" if difference.where == "tool" else "both"
            rows.append(_row(name, side, difference, None if on is None else name in on, on))
    for name, difference in ORIGINAL_ONLY.items():
        rows.append(_row(name, "original only", difference, None if on is None else False))
    if tools is None:
        rows.append(_row("mcp__<server>__<tool>", "cireil only", MCP, None))
    else:
        for tool in tools:
            if tool.origin != "built-in":
                rows.append(_row(tool.name, "cireil only", _extra(tool), True))
    identical = [
        name
        for name in BUILTIN_NAMES
        if not builtin(name).spec_differences and (on is None or on.get(name, builtin(name)).origin == "built-in")
    ]
    return {"rows": rows, "identical": identical, "agent": tools is not None}
