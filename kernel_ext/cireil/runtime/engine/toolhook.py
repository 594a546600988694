"""Step mode from Python: `agent.turn(..., on_tool_call=fn)` asks `fn` before each tool call of the turn.

    def review(call, step):              # call: {"id", "name", "input"}; step: the model call's number
        if call["name"] == "write":
            return ToolDecision.skip("not today")
        if call["name"] == "read":
            return ToolDecision.edit({"path": "/workspace/other.md"})
        return None                      # or ToolDecision.approve(): run it as the model asked

`fn` may be a plain function (run in a worker thread, so it may block, e.g. on input()) or a coroutine
function. `ToolDecision.mock(result)` gives the model `result` instead of running the tool. An interrupt
while `fn` is deciding ends the turn, storing nothing of it, as any interrupt does.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

ToolCallHook = Callable[[dict, int], "ToolDecision | Awaitable[ToolDecision | None] | None"]


@dataclass(frozen=True)
class ToolDecision:
    action: str  # approve | edit | skip | mock
    arguments: dict = field(default_factory=dict)  # edit: what the call runs with instead
    result: dict = field(default_factory=dict)  # mock: what the model gets instead of running the tool

    @classmethod
    def approve(cls) -> ToolDecision:
        return cls("approve")

    @classmethod
    def edit(cls, arguments: dict) -> ToolDecision:
        if not isinstance(arguments, dict):
            raise TypeError(f"edited arguments must be a dict, not {type(arguments).__name__}")
        return cls("edit", arguments=dict(arguments))

    @classmethod
    def skip(cls, reason: str = "") -> ToolDecision:
        error = "The person reviewing this turn skipped this call; it did not run."
        return cls("skip", result={"error": f"{error} {reason}".strip(), "skipped": True, "success": False})

    @classmethod
    def mock(cls, result: dict) -> ToolDecision:
        if not isinstance(result, dict):
            raise TypeError(f"a mocked result must be a dict, not {type(result).__name__}")
        return cls("mock", result=dict(result))


# What the person did with a call, as the recorder keeps it (runtime/recorder): approved, edited (with the
# arguments the model asked for), skipped, mocked, or refused (the hook answered something else).
Review = dict


async def decide(hook: ToolCallHook, call: dict, step: int) -> tuple[dict | None, Review]:
    """Ask the hook about `call`; an edit changes the call in place (so the history shows what ran).
    Returns the result to give the model without running the tool (None: run it), and the review."""
    asked = dict(call.get("input") or {})
    view = {"id": call.get("id"), "name": call.get("name"), "input": dict(asked)}
    if inspect.iscoroutinefunction(hook):
        decision = await hook(view, step)
    else:
        decision = await asyncio.to_thread(hook, view, step)
        if inspect.isawaitable(decision):
            decision = await decision
    if decision is None or (isinstance(decision, ToolDecision) and decision.action == "approve"):
        return None, {"action": "approved"}
    if not isinstance(decision, ToolDecision):
        refused = {
            "error": f"on_tool_call returned {decision!r}, not a ToolDecision or None; the call did not run.",
            "success": False,
        }
        return refused, {"action": "refused"}
    if decision.action == "edit":
        call["input"] = dict(decision.arguments)
        call.pop("rawArguments", None)
        return None, {"action": "edited", "asked": asked}
    return dict(decision.result), {"action": "skipped" if decision.action == "skip" else "mocked"}
