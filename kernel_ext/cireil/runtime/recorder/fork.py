"""Fork a recorded turn at one of its steps: `agent.fork(turn, step, ...)`.

The fork is a new turn in a new session, `notebook:fork-<turn>-<step>`, that starts from the history the
original session had before the turn (its opened files as they are now) and is recorded with a link to
its origin; the original recording is never changed. Model calls 1..step get the recorded replies; at
`step`, one tool call (`position`) may run with edited `arguments`, or give the model a substituted
`result` instead of running. After it:
- offline (default): the recorded replies that follow are served in order; when they run out, the turn
  ends quietly (no-response);
- `live=True`: the real model continues (`model`/`provider` choose another one than the recording's).
Tools run for real on the agent, as in any turn, except MCP tools: their calls are answered from the
turn's cassette (recorder/mcpreplay.py; recorded in the fork as mocked, since they did not run), and a call
the recording has no answer for (edited arguments) fails with a message naming the nearest recorded one;
`live_mcp=True` calls the live servers instead.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..engine.engine import Engine
    from ..engine.turn import EventSink, TurnOutcome
    from .host import ForkHost
    from .model import RecordedTurn

END_CALL_ID = "call_fork_end"  # the no-response an offline fork ends with when the recorded replies run out


class RecordedClient:
    """A provider client answering from recorded replies, then from `live` (or by ending the turn)."""

    def __init__(self, replies: list[dict], provider: Any, model_cfg: Any, live: Any = None) -> None:
        self.replies = list(replies)
        self.provider = provider
        self.model_cfg = model_cfg
        self.live = live
        self.served = 0

    async def complete(self, request: Any, *, on_delta: Any = None) -> Any:
        from ..engine.engine import request_body
        from ..engine.openai import ModelReply, NoToolCalls, ProviderError
        from ..sessions import messages as msgs

        if self.served >= len(self.replies):
            if self.live is not None:
                return await self.live.complete(request, on_delta=on_delta)
            recorded = {"tool_calls": [{"id": END_CALL_ID, "name": "no-response", "arguments": {}}]}
        else:
            recorded = self.replies[self.served]
        self.served += 1
        body = request_body(self.provider, self.model_cfg, request)  # in the provider's own shape
        if "error" in recorded:
            error = recorded["error"]
            if error.startswith("the model answered without calling a tool"):
                exc: ProviderError = NoToolCalls(
                    error, text=recorded.get("content") or "", thinking="", finish_reason="stop", usage={}
                )
            else:
                exc = ProviderError(error)
            exc.request_body = body
            raise exc
        parts: list[dict] = []
        if recorded.get("reasoning"):
            parts.append({"type": "thinking", "thinking": recorded["reasoning"]})
        for call in recorded.get("tool_calls") or ():
            part = {
                "type": "toolCall",
                "id": call.get("id"),
                "name": call["name"],
                "input": call.get("arguments") or {},
            }
            if "rawArguments" in call:
                part["rawArguments"] = call["rawArguments"]
            parts.append(part)
        usage = dict(recorded.get("usage") or {})
        return ModelReply(msgs.assistant_message(parts), usage, recorded.get("finish_reason") or "tool_calls", body)


def _session_id(agent: ForkHost, turn: RecordedTurn, step: int) -> str:
    base = f"notebook:fork-{turn.id}-{step}"
    candidate, n = base, 1
    while agent.has_session(candidate):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_options(
    turn: RecordedTurn,
    step: Any,
    position: Any,
    arguments: Any,
    result: Any,
    live: Any,
    model: Any,
    provider: Any,
    on_event: Any,
    live_mcp: Any = False,
) -> None:
    """Every option of a fork, typed and in range, before the fork makes anything."""
    steps = len(turn.steps)
    if not _is_int(step) or not 1 <= step <= steps:
        raise ValueError(f"turn {turn.id} has steps 1 to {steps}, not {step!r}")
    if not _is_int(position) or position < 0:
        raise ValueError(f"position must be a tool call's index (0, 1, ...), not {position!r}")
    for name, value in (("arguments", arguments), ("result", result)):
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ValueError(f"{name} must be a dict (a JSON object), not {type(value).__name__}")
        try:  # it is recorded and sent to the model as JSON
            json.dumps(value)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"{name} must be JSON data: {exc}") from None
    for name, flag in (("live", live), ("live_mcp", live_mcp)):
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be True or False, not {flag!r}")
    for name, value in (("model", model), ("provider", provider)):
        if value is not None and not (isinstance(value, str) and value):
            raise ValueError(f"{name} must be a name (a non-empty string), not {value!r}")
    if on_event is not None and not callable(on_event):
        raise ValueError("on_event must be callable")


def fork(agent: ForkHost, turn: RecordedTurn, step: int, **options: Any) -> TurnOutcome:
    """`fork_turn` run to its end on the runtime loop; `options` are its keyword arguments."""
    from ..base.loop import RUNTIME

    return RUNTIME.run(fork_turn(agent, turn, step, **options))


def fork_turn(
    agent: ForkHost,
    turn: RecordedTurn,
    step: int,
    *,
    position: int = 0,
    arguments: dict | None = None,
    result: dict | None = None,
    live: bool = False,
    model: str | None = None,
    provider: str | None = None,
    on_event: EventSink | None = None,
    live_mcp: bool = False,
    history: list[dict] | None = None,
) -> Any:
    """`fork`'s work as a coroutine for the runtime loop (the turn view runs it); bad input raises here,
    before anything is created: a refused fork leaves no session, in memory or in sessions.db. `history`: the
    messages the turn started from when the agent's sessions cannot say (a production turn: the original's
    session and its message ids never went through cireil; the caller reads them from the recorded request)."""
    turn.check_whole()
    steps = turn.steps
    _check_options(turn, step, position, arguments, result, live, model, provider, on_event, live_mcp)
    from .mcpreplay import RecordedMcp, served_cassette

    served = served_cassette(turn, None, live_mcp)  # refused here for a turn recorded without one
    calls = steps[step - 1].tool_calls
    if (arguments is not None or result is not None) and not 0 <= position < len(calls):
        raise ValueError(f"step {step} of turn {turn.id} made {len(calls)} tool call(s); position {position} is none")
    if arguments is not None and not isinstance(calls[position], dict):
        raise ValueError(f"turn {turn.id}, step {step}: the recorded tool call {position} is not an object")
    if (model or provider) and not live:
        raise ValueError("another model or provider answers only a live fork: pass live=True")
    if not isinstance(turn.user, dict):
        raise ValueError(f"turn {turn.id} has no user message to start from")
    from ..sessions.errors import SessionError

    if history is not None:
        before, cursor, opened = history, 0, []
        if agent.has_session(turn.session_id):  # the original's session in this agent's sessions.db: its files
            try:
                opened = list(agent.session_for(turn.session_id).opened_files)
            except SessionError:
                opened = []
    else:
        if not agent.has_session(turn.session_id):  # session_for would make an empty one: nothing to start from
            raise ValueError(f"session {turn.session_id} is gone; turn {turn.id} cannot be forked")
        try:
            origin = agent.session_for(turn.session_id)
        except SessionError as exc:
            raise ValueError(f"turn {turn.id} cannot be forked: {exc}") from None
        at = next((i for i, m in enumerate(origin.history) if m.get("id") == turn.user.get("id")), None)
        if at is None:
            raise ValueError(f"session {turn.session_id} no longer holds the message turn {turn.id} started with")
        before = [m for m in origin.history[:at] if m.get("persistent", True)]
        cursor, opened = min(origin.cursor, len(before)), list(origin.opened_files)
    replies = [copy.deepcopy(s.reply) for s in steps] if not live else [copy.deepcopy(s.reply) for s in steps[:step]]
    if not all(isinstance(r, dict) for r in replies):
        raise ValueError(f"turn {turn.id}: a recorded reply is not an object; the recording was edited")
    if arguments is not None:
        replies[step - 1]["tool_calls"][position]["arguments"] = dict(arguments)
        replies[step - 1]["tool_calls"][position].pop("rawArguments", None)
    target = _session_id(agent, turn, step)
    session = agent.session_for(target)
    session.history[:] = [copy.deepcopy(m) for m in before]
    session.cursor = cursor
    session.opened_files[:] = opened
    if agent.store is not None:
        agent.store.commit(session, list(session.history))
    agent.recording.origins[target] = {"turn": turn.id, "step": step, "session": turn.session_id}
    hook = None
    if result is not None:
        substitute = dict(result)
        seen = {"count": 0}
        wanted = sum(len(s.tool_calls) for s in steps[: step - 1]) + position

        def hook(call: dict, n: int) -> Any:  # the substituted result, for that one call only
            from ..engine.toolhook import ToolDecision

            index, seen["count"] = seen["count"], seen["count"] + 1
            return ToolDecision.mock(substitute) if index == wanted and n == step else None

    user = copy.deepcopy(turn.user)
    from ..sessions import messages as msgs

    fresh = msgs.user_message("")
    user.update({"id": fresh["id"], "timestamp": fresh["timestamp"]})
    mcp = RecordedMcp(served, hook) if served is not None else None
    return _run(agent.engine, session, user, turn, replies, live, model, provider, mcp or hook, on_event, mcp)


async def _run(
    engine: Engine,
    session: Any,
    user: dict,
    turn: RecordedTurn,
    replies: list[dict],
    live: bool,
    model: str | None,
    provider: str | None,
    hook: Any,
    on_event: Any,
    mcp: Any = None,
) -> TurnOutcome:
    """A turn whose model calls are answered by the recorded replies first (and by the real model after them
    when `live`); recorded like any turn."""

    def recorded(chosen: Any, model_name: str, model_cfg: Any) -> RecordedClient:
        real = engine.client(chosen, model_name, model_cfg) if live else None
        return RecordedClient(replies, replace(chosen), model_cfg, real)

    from contextlib import nullcontext

    async with mcp if mcp is not None else nullcontext():  # the mock lives as long as the turn
        return await engine.run_turn(
            session,
            user,
            on_event=on_event or (lambda event: None),
            provider=provider or turn.provider,
            model=model or turn.model,
            on_tool_call=hook,
            client=recorded,
            offline=not live,
        )
