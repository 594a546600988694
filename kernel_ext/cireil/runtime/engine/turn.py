"""One agent turn: the loop of reference §8.2–8.3.

The session is committed in whole steps: the user's message when the turn starts, then each
model reply together with the results of all its tool calls, in one transaction. An interrupt or a
provider failure in the middle of a step puts the session back where the last commit left it, so
neither the database nor the in-memory session ever holds a tool call without its result.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any, Protocol

from ..base.controls import terminal_safe
from ..base.errors import CireilError
from ..base.secrets import mask, mask_data
from ..config.cireil_config import DEFAULT_LIMITS, setting
from ..sessions import messages as msgs
from ..sessions.state import not_granted
from ..toolkit.conversation import Conversation
from ..toolkit.result import ToolResult
from ..toolkit.resultcap import cap_result
from ..toolkit.tool import execute

if TYPE_CHECKING:
    from ..config.engine_config import ModelConfig, ProviderConfig
    from ..sessions.state import Session
    from ..toolkit.tool import Tool
    from .host import TurnHost
    from .httpcall import HttpProvider
    from .replytypes import ModelRequest

EventSink = Callable[[dict], None]

NOT_DELIVERED = (
    "Your previous message was not delivered: text outside a respond call never reaches anyone. "
    "Call respond to send it, or no-response to end the turn without a message."
)


class StepRequest(Protocol):
    """What a step uses of the request the engine prepared for it (engine.PreparedRequest)."""

    @property
    def model_request(self) -> ModelRequest: ...

    @property
    def estimate(self) -> int:
        """The request's size in tokens, as estimated before it is sent."""

    @property
    def notes(self) -> list[str]:
        """What the agent is told about the request's parts (opened files that vanished were closed)."""


class RequestBuilder(Protocol):
    """The engine's Engine.build_request: the next model request of a session, at each step of its turn."""

    def __call__(
        self,
        session: Session,
        provider: ProviderConfig,
        model: str,
        model_cfg: ModelConfig,
        tools: dict[str, Tool],
        disabled: set[str],
    ) -> StepRequest: ...


class StepLimitReached(CireilError):
    """A turn made its [limits] max_steps model calls without ending: a model calling tools forever (and a
    cron or heartbeat turn nobody watches) stops spending tokens here."""

    def __init__(self, steps: int) -> None:
        super().__init__(
            f"the turn was stopped after {steps} model calls without a respond or no-response (the step limit); "
            f"the steps so far are kept in the session; raise {setting('max_steps')} if the task needs more"
        )
        self.steps = steps

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a cell: the one line, not cireil's frames."""
        # a provider chose some of this text: a terminal or front end shows its control characters, never acts on them
        return [terminal_safe(f"{type(self).__name__}: {self}")]


def breaker_notice(tool: str, count: int) -> str:
    return (
        f"The tool `{tool}` failed {count} times in a row and has been disabled for the rest of this turn. "
        "Stop and tell the person what went wrong, ask them for help, or do something else."
    )


@dataclass
class TurnOutcome:
    session_id: str
    ended: str = ""  # "respond" | "no-response" | "interrupted" | "error"
    steps: int = 0
    responses: list[dict] = field(default_factory=list)  # respond events of this turn, in order
    usage: dict[str, int] = field(default_factory=dict)  # summed over the turn's model calls
    new_messages: list[dict] = field(default_factory=list)  # what the turn committed
    error: str | None = None
    model: str = ""
    # per step, in seconds: {"total", "model" (the provider call, network included), "tools"}
    timings: list[dict[str, float]] = field(default_factory=list)

    @property
    def model_s(self) -> float:
        return sum(t["model"] for t in self.timings)

    @property
    def tools_s(self) -> float:
        return sum(t["tools"] for t in self.timings)

    @property
    def text(self) -> str:
        """What the agent said to this session, as one string (the last message wins for scheduled jobs)."""
        return "\n\n".join(r["content"] for r in self.responses if r.get("sessionId") == self.session_id)


def _media_message(pending: list[dict]) -> dict | None:
    """Images and videos read this turn go out once, with the next request, deduplicated by content."""
    seen: set[str] = set()
    parts = []
    for item in pending:
        raw = item["data"] if isinstance(item["data"], bytes) else item["data"].encode("ascii")
        digest = hashlib.sha256(raw).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        data = base64.b64encode(raw).decode("ascii") if isinstance(item["data"], bytes) else item["data"]
        parts.append({"type": item["type"], "mediaType": item["mediaType"], "data": data})
    if not parts:
        return None
    return msgs.user_message("", parts=parts, media=True)


class Turn:
    """Runs one turn of one session for the engine's host (Engine.run_turn makes it); `run()` once."""

    def __init__(
        self,
        session: Session,
        *,
        host: TurnHost,
        build_request: RequestBuilder,
        on_event: EventSink,
        provider: ProviderConfig,
        model: str,
        model_cfg: ModelConfig,
        client: HttpProvider,
        tools: dict[str, Tool],
        notices: list[str],
        persist: bool = True,
        max_steps: int = DEFAULT_LIMITS.max_steps,  # 50; the original has no cap (reference §8.2)
    ) -> None:
        self.host = host  # the agent, through what a turn needs of it (host.py)
        self.build_request = build_request
        self.persist = persist  # False: an isolated cron run, never written to sessions.db (as the original)
        self.session = session
        self.on_event = on_event
        self.provider = provider
        self.model = model
        self.model_cfg = model_cfg
        self.client = client
        self.tools = tools  # fixed for the whole turn, even if tools.toml changes meanwhile
        self.notices = notices
        self.max_steps = max_steps  # model calls in this turn, retries included
        self.outcome = TurnOutcome(session.id, model=model)
        self._uncommitted: list[dict] = []
        self._checkpoint = session.state()
        self.on_tool_call: Any = None  # step mode from Python (engine/toolhook.py), asked before each call

    # -- persistence ------------------------------------------------------------------------------
    def _add(self, message: dict) -> None:
        self.session.history.append(message)
        self._uncommitted.append(message)

    def _commit(self) -> None:
        store = self.host.store
        if store is not None and self.persist:
            try:
                store.commit(self.session, self._uncommitted)
            except BaseException:  # refused or failed: memory goes back to what is stored, as after an interrupt
                self._rollback()
                raise
        self.outcome.new_messages += [m for m in self._uncommitted if m.get("persistent", True)]
        self._uncommitted = []
        self._checkpoint = self.session.state()

    def _rollback(self) -> None:
        self.session.restore(self._checkpoint)
        self._uncommitted = []

    # -- events -------------------------------------------------------------------------------------
    def emit(self, event: dict) -> None:
        with contextlib.suppress(Exception):  # a broken display must never break the agent's turn
            self.on_event(event)

    def _conversation_event(self, event: dict) -> None:
        if event.get("type") == "respond":
            self.outcome.responses.append(event)
        self.emit(event)

    # -- the loop -----------------------------------------------------------------------------------
    async def run(self, user: dict | None) -> TurnOutcome:
        self.emit(
            {
                "type": "start",
                "sessionId": self.session.id,
                "message": user,
                "model": self.model,
                "provider": self.provider.name,
                "tools": list(self.tools),
            }
        )
        for text in self.notices:
            self.emit({"type": "notice", "text": text})
        if user is not None:
            # stored with the rest of the turn at its end, or not at all (as the original: nothing of a turn in
            # progress is in sessions.db, and a failed one leaves no trace there; the recorder keeps its own)
            self._add(user)
        conversation = Conversation(
            store=self.host.store,
            trigger_message_id=user["id"] if user else None,
            events=self._conversation_event,
            host=self.host,
        )
        failures: dict[str, int] = {}
        disabled: set[str] = set()
        retries = 0
        try:
            while True:
                if self.outcome.steps >= self.max_steps:
                    raise StepLimitReached(self.outcome.steps)
                step_started = time.perf_counter()
                self.outcome.steps += 1
                step = self.outcome.steps
                media = _media_message(self.session.pending_media)
                self.session.pending_media.clear()
                if media is not None:
                    self._add(media)
                request = self.build_request(
                    self.session, self.provider, self.model, self.model_cfg, self.tools, disabled
                )
                for note in request.notes:  # opened files that vanished were closed; the agent is told
                    self._add(msgs.user_message(note, notice=True))
                self.emit({"type": "request", "step": step, "estimate": request.estimate})
                model_started = time.perf_counter()
                reply = await self._complete(request.model_request, step, retries)
                model_s = time.perf_counter() - model_started
                if reply is None:  # a failed attempt that may be retried; its messages (if any) are queued
                    retries += 1
                    self._timing(step_started, model_s, 0.0)
                    continue
                # a provider that echoes a configured key in its reply: the echo is not kept (base/secrets.py)
                reply.message = mask_data(reply.message)
                msgs.unique_call_ids(reply.message, self.session.history, self.session.call_ids)
                self._add(reply.message)
                self._count_usage(reply.usage)
                for note in getattr(reply, "notes", None) or ():  # what the provider got wrong but was ignored
                    self.emit({"type": "notice", "text": mask(note)})
                self.emit(
                    {
                        "type": "assistant",
                        "step": step,
                        "message": reply.message,
                        "usage": reply.usage,
                        "finish": reply.finish_reason,
                        "body": reply.request_body,  # for the turn recorder (runtime/recorder)
                    }
                )
                tools_started = time.perf_counter()
                ended = await self._run_calls(msgs.tool_calls(reply.message), conversation, failures, disabled, step)
                tools_s = time.perf_counter() - tools_started
                self._timing(step_started, model_s, tools_s)
                if ended:
                    self.outcome.ended = ended
                    break
            self._commit()
        except asyncio.CancelledError:
            self._rollback()
            self.outcome.ended = "interrupted"
            self._finish()
            raise
        except Exception as exc:
            self._rollback()
            self.outcome.ended = "error"
            self.outcome.error = mask(str(exc)) or type(exc).__name__
            self._finish()
            raise
        self._finish()
        return self.outcome

    def _timing(self, started: float, model_s: float, tools_s: float) -> None:
        self.outcome.timings.append({"total": time.perf_counter() - started, "model": model_s, "tools": tools_s})

    def _finish(self) -> None:
        # context messages meant for this turn only leave the history now (reference §7.4); looked for in C
        # first (dict.get over the history), as a long session seldom has one
        history = self.session.history
        if not all(map(dict.get, history, repeat("persistent"), repeat(True))):
            history[:] = [m for m in history if m.get("persistent", True)]
        self.emit({"type": "end", "outcome": self.outcome})

    async def _complete(self, request: Any, step: int, retries: int) -> Any:
        """The model's reply, or None after a failure that is retried (reference §8.2 step 4)."""
        from .openai import ContentFiltered, NoToolCalls, ProviderError

        def delta(event: dict) -> None:
            # the provider's own kind (text, thinking, toolCall) moves to "kind"
            self.emit({**event, "type": "delta", "kind": event.get("type"), "step": step})

        try:
            return await self.client.complete(request, on_delta=delta)
        except ContentFiltered:
            raise
        except ProviderError as exc:
            if not exc.retryable or retries >= self.provider.max_generation_retries:
                raise
            if isinstance(exc, NoToolCalls):
                reason = "the model answered without calling a tool"
                self.emit({"type": "retry", "step": step, "reason": reason, "body": exc.request_body})
                if exc.text:
                    self._add(msgs.assistant_message([{"type": "text", "text": mask(exc.text)}]))
                self._add(msgs.user_message(NOT_DELIVERED, notice=True))
            else:
                self.emit({"type": "retry", "step": step, "reason": str(exc), "body": exc.request_body})
            return None

    def _count_usage(self, usage: dict) -> None:
        for key, value in (usage or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.outcome.usage[key] = self.outcome.usage.get(key, 0) + value

    async def _run_calls(
        self, calls: list[dict], conversation: Conversation, failures: dict[str, int], disabled: set[str], step: int
    ) -> str:
        """Every call in order, even after a final respond; returns how the turn ended, or ""."""
        ended = ""
        notices: list[str] = []
        for call in calls:
            name = call["name"]
            self.emit({"type": "tool", "step": step, "call": call})
            started = time.perf_counter()
            data, inspect, review = await self._call(call, conversation, disabled)
            # what the model gets and the session keeps: a huge result would be re-sent with every request
            data = cap_result(
                data,
                limit=self.host.result_limit,
                agent_dir=self.host.directory,
                tool=name,
                call_id=str(call.get("id", "")),
            )
            result = ToolResult(name, call.get("input") or {}, data, time.perf_counter() - started, agent=self.host)
            result.inspect = inspect  # for the view only (an MCP call's wire): never in the history
            self._add(msgs.tool_response(call["id"], name, data))
            self.emit({"type": "result", "step": step, "call": call, "result": result, "review": review})
            declared = self._declared(name)  # the tool says whether it ends the turn and may be disabled
            if declared is not None and declared.ends_turn_with(data):
                # an unconditional end (no-response) wins over a message that ended it (reference §8.3)
                ended = name if declared.ends_turn == "always" else ended or name
            if data.get("success") is False:
                failures[name] = failures.get(name, 0) + 1
                threshold = self.model_cfg.tool_fail_threshold
                breakable = declared is None or declared.breakable
                if failures[name] >= threshold and breakable and name not in disabled:
                    disabled.add(name)
                    notices.append(breaker_notice(name, failures[name]))
            elif "success" in data:
                failures[name] = 0
        for text in notices:
            self._add(msgs.user_message(text, notice=True))
            self.emit({"type": "notice", "text": text})
        return ended

    def _declared(self, name: str) -> Tool | None:
        """The tool called `name`, even when this session may not call it or it is off (no-response still ends)."""
        from ..toolkit.registry import BUILTIN_NAMES, builtin

        tool = self.tools.get(name) or self.host.current_tools().get(name)
        return tool or (builtin(name) if name in BUILTIN_NAMES else None)

    async def _call(self, call: dict, conversation: Conversation, disabled: set[str]) -> tuple[dict, dict, dict | None]:
        """The result data, what the tool left for the person's view (ToolResult.inspect), and, in step
        mode, what the person did with the call (engine/toolhook.py)."""
        review = None
        if self.on_tool_call is not None:
            from .toolhook import decide

            decided, review = await decide(self.on_tool_call, call, self.outcome.steps)
            if decided is not None:
                return decided, {}, review
        data, inspect = await self._run_tool(call, conversation, disabled)
        return data, inspect, review

    async def _run_tool(self, call: dict, conversation: Conversation, disabled: set[str]) -> tuple[dict, dict]:
        name = call["name"]
        tool = self.tools.get(name)
        enabled = self.host.current_tools().get(name) if tool is None else None
        if enabled is not None and not self.session.allows(enabled):
            return not_granted(name, self.session), {}  # the grant authorizes calls as it filters what is offered
        if tool is None or name in disabled:
            why = "disabled for the rest of this turn after repeated failures" if tool else "not available"
            return {"error": f"Tool '{name}' is {why}.", "success": False}, {}
        if "rawArguments" in call:
            return {
                "error": f"The arguments of this call are not valid JSON: {call['rawArguments'][:200]}",
                "hint": "Send the arguments as one JSON object.",
                "success": False,
            }, {}
        ctx = self.host.tool_context(self.session, conversation)
        data = await execute(tool, call.get("input") or {}, ctx)
        return data, ctx.extra.get("inspect") or {}
