"""Replay of a recorded turn, offline: the recorded replies are served by ScriptedLLM on loopback, the
tools run for real, and every tool result is compared with the recording.

By default the tools run on a throwaway copy of the agent directory (its files, not its sessions:
sessions.db and cireil's side files stay behind, so no scheduled job fires; the turn runs in a fresh
session of the recorded session's id), whose engine.toml is pointed at the scripted server so that
nothing in the copy can reach a real model. `in_place=True` runs
the tools on the agent itself, in a new session `notebook:replay-<turn>`; tools that start other turns
(invoke, schedule) then act on the real agent, and those turns use its real provider.

A turn recorded in step mode replays what the person did: an edited call runs with the arguments it
ran with, a skipped or mocked call gives the model the recorded result again.

MCP calls are answered from the turn's cassette by default (recorder/mcpreplay.py: the copy's mcp.toml
points at an McpMock on loopback; a call with no recorded answer fails with a message naming the nearest
recorded one), or by the live servers with `live_mcp=True`; each MCP call says which (`ComparedCall.mcp`).

The replay turn is not recorded. A recorded call whose tool is gone, or whose arguments the tool's
current schema refuses, is named in `ReplayResult.invalid`; it still runs, and fails, as it would for
the model.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.loop import RUNTIME
from ..files.agentcopy import copy_agent_tree

if TYPE_CHECKING:
    from ..engine.engine import Engine
    from ..engine.host import TurnHost
    from ..engine.turn import TurnOutcome
    from .host import ReplayHost
    from .model import RecordedTurn

LEFT_BEHIND = ("sessions.db*", "cireil-side.db*", "cireil-recordings.db*", ".cireil-tmp-*")
END_CALL_ID = "call_replay_end"


@dataclass
class ComparedCall:
    step: int
    position: int
    name: str
    arguments: Any
    recorded: dict | None  # the result kept in the recording (None: the replay made a call the recording lacks)
    replayed: dict | None  # the result now (None: the recorded call did not happen in the replay)
    invalid: str | None = None  # why the current tool refuses the recorded call, if it does
    mcp: str | None = None  # an MCP call answered "from recording" (the cassette) or "live"; None: not MCP

    @property
    def differs(self) -> bool:
        return self.recorded != self.replayed


@dataclass
class ReplayedStep:
    n: int
    calls: list[ComparedCall] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return any(c.differs for c in self.calls)


@dataclass
class ReplayResult:
    turn_id: int
    in_place: bool
    steps: list[ReplayedStep]
    outcome: TurnOutcome
    seconds: float  # the whole replay, copying included
    tool_seconds: float
    model_calls: int  # requests the scripted server answered
    recorded_model_calls: int
    invalid: list[str] = field(default_factory=list)

    @property
    def differing(self) -> list[ReplayedStep]:
        return [s for s in self.steps if s.differs]

    @property
    def same(self) -> bool:
        """Every tool result as recorded, and the model asked exactly as often."""
        return not self.differing and self.model_calls == self.recorded_model_calls

    @property
    def tool_calls(self) -> list[tuple[str, Any]]:
        """(name, arguments) of every call the replay made, in order."""
        return [(c.name, c.arguments) for s in self.steps for c in s.calls if c.replayed is not None]

    def summary(self) -> str:
        verdict = "every tool result as recorded" if self.same else f"{len(self.differing)} step(s) differ"
        where = "in place" if self.in_place else "on a throwaway copy"
        extra = ""
        if self.model_calls > self.recorded_model_calls:
            more = self.model_calls - self.recorded_model_calls
            extra = f"; the replay asked the model {more} more time(s) than recorded"
        return (
            f"replay of turn {self.turn_id} ({where}): {len(self.steps)} steps, {verdict}{extra}; "
            f"{self.seconds:.2f} s ({self.tool_seconds:.2f} s in tools)"
        )

    def __repr__(self) -> str:
        return f"<ReplayResult {self.summary()}>"


def scripted_replies(turn: RecordedTurn) -> list:
    """The recorded replies as ScriptedLLM replies, in order."""
    from ...testing.scripted_llm import reply

    out = []
    for step in turn.steps:
        r = step.reply
        if "error" in r:
            if r.get("error", "").startswith("the model answered without calling a tool"):
                out.append(reply.text(r.get("content") or ""))
            else:
                out.append(reply.error(500, r["error"]))
            continue
        calls = [(c["name"], c.get("rawArguments", c.get("arguments") or {}), c.get("id")) for c in r["tool_calls"]]
        out.append(reply.tool_calls(*calls, reasoning=r.get("reasoning"), text=r.get("content")))
    return out


def invalid_calls(host: TurnHost, turn: RecordedTurn) -> dict[tuple[int, int], str]:
    """Recorded calls the agent's current tools refuse: {(step, position): why}."""
    tools = host.current_tools()
    out: dict[tuple[int, int], str] = {}
    for step in turn.steps:
        for position, call in enumerate(step.tool_calls):
            name = call.get("name") or ""
            tool = tools.get(name)
            if tool is None:
                out[(step.n, position)] = f"step {step.n}: tool '{name}' is not enabled any more"
                continue
            if "rawArguments" in call:
                continue  # the model's own invalid JSON: refused now as then
            args = call.get("arguments") or {}
            try:
                if tool.prepare is not None:
                    args = tool.prepare(args)
                issues = tool.params.validate(args)[1]
            except Exception as exc:  # a broken schema is named like a refusal, never raised into the cell
                issues = [exc]
            if issues:
                out[(step.n, position)] = f"step {step.n}: {name} no longer accepts the recorded arguments: {issues[0]}"
    return out


def offline_copy(agent_dir: str | Path, base_url: str, into: str | Path, mcp: Any = None) -> Path:
    """A copy of the agent at `agent_dir` under `into` (sessions left behind) whose every provider talks to
    the scripted server at `base_url`, and, given a started McpMock `mcp`, every MCP server to it
    (mcpreplay.py): what a replay and an exported notebook run on."""
    from ..files.layout import AgentLayout
    from .mcpreplay import point_copy_at_mock

    directory = _copy_agent(AgentLayout.find(agent_dir), Path(into))
    _point_engine_at(directory, base_url)
    if mcp is not None:
        point_copy_at_mock(directory, mcp)
    return directory


def _copy_agent(layout: Any, into: Path) -> Path:
    """The agent's directory (and its runtime root's config and plugins) under `into`, sessions left behind."""
    target = into / "agents" / layout.slug if layout.runtime_root is not None else into / layout.slug
    copy_agent_tree(layout.directory, target, LEFT_BEHIND)
    if layout.runtime_root is not None:
        for sub in ("config", "plugins"):
            source = layout.runtime_root / sub
            if source.is_dir():
                shutil.copytree(source, into / sub, symlinks=True)
    return target


def _point_engine_at(directory: Path, base_url: str) -> None:
    """Every provider of the copy's engine.toml talks to the scripted server (OpenAI-compatible, whatever
    kind it was), with a dummy key: a turn the copy starts by itself (invoke) never reaches a real model."""
    import tomlkit

    path = directory / "config" / "engine.toml"
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    for _, table in doc.items():
        if isinstance(table, dict) and any(k in table for k in ("apiBase", "apiKey", "defaultModel", "kind")):
            table["apiBase"] = base_url
            table["apiKey"] = "replay"
            table.pop("customHeaders", None)
            if "kind" in table:
                table["kind"] = "openai"
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")


def replay(
    agent: ReplayHost,
    turn: RecordedTurn,
    *,
    in_place: bool = False,
    live_mcp: bool = False,
    cassette: dict | None = None,
) -> ReplayResult:
    """Re-run `turn` with its recorded replies; see the module's docstring. The throwaway copy is loaded
    by the agent's own class, with its Python tools. `cassette` overrides the turn's own (an exported test
    carries it)."""

    def load(directory: Path) -> Any:
        return type(agent).load(directory, tools=list(agent.extra_tools.values()))

    return _replay(load, agent.directory, turn, agent if in_place else None, live_mcp, cassette)


def replay_at(
    load: Any, agent_dir: str | Path, turn: RecordedTurn, *, live_mcp: bool = False, cassette: dict | None = None
) -> ReplayResult:
    """`replay` on a throwaway copy of the agent at `agent_dir`, loaded by `load(path)` (cireil.load), without
    ever loading the agent itself: an exported test runs where its MCP servers are down or unreachable."""
    return _replay(load, Path(agent_dir), turn, None, live_mcp, cassette)


def _replay(
    load: Any, agent_dir: Path, turn: RecordedTurn, in_place: Any, live_mcp: bool, cassette: dict | None
) -> ReplayResult:
    from contextlib import nullcontext

    from ...testing.scripted_llm import ScriptedLLM, reply
    from .mcpreplay import RecordedMcp, served_cassette, start_mock, with_every_server

    started = time.perf_counter()
    turn.check_whole()
    if not turn.steps:
        raise ValueError(f"turn {turn.id} has no recorded model call to replay")
    served = served_cassette(turn, cassette, live_mcp)
    end = reply.tool_calls(("no-response", {}, END_CALL_ID))  # a replay that wants more calls ends here
    hook = reviewed_calls(turn)
    with ScriptedLLM(*scripted_replies(turn), default=end) as llm, tempfile.TemporaryDirectory() as tmp:
        mock = start_mock(with_every_server(served, agent_dir)) if served is not None and in_place is None else None
        try:
            if in_place is not None:
                target = in_place
                if served is not None:
                    hook = RecordedMcp(served, hook)
            else:
                directory = offline_copy(agent_dir, llm.base_url, tmp, mock)
                target = load(directory)
            try:
                invalid = invalid_calls(target, turn)
                events: list[dict] = []
                session = target.session_for(f"notebook:replay-{turn.id}" if in_place is not None else turn.session_id)
                scope = hook if isinstance(hook, RecordedMcp) else nullcontext()
                outcome = RUNTIME.run(_run(target.engine, session, turn, llm.base_url, events.append, hook, scope))
            finally:
                if in_place is None:
                    target.close()
        finally:
            if mock is not None:
                mock.stop()
        model_calls = len(llm.requests)
    steps = _compare(turn, events, invalid, "from recording" if served is not None else "live")
    return ReplayResult(
        turn.id,
        in_place is not None,
        steps,
        outcome,
        time.perf_counter() - started,
        outcome.tools_s,
        model_calls,
        len(turn.steps),
        list(invalid.values()),
    )


async def _run(
    engine: Engine, session: Any, turn: RecordedTurn, base_url: str, on_event: Any, hook: Any, scope: Any
) -> TurnOutcome:
    """The recorded turn again, its provider's client replaced by one for the scripted server; not recorded."""
    from ..config.engine_config import KeySource
    from ..engine.openai import OpenAIProvider

    made: list[OpenAIProvider] = []

    def scripted(chosen: Any, model: str, model_cfg: Any) -> OpenAIProvider:
        offline = replace(chosen, api_base=base_url, api_keys=[KeySource("replay")], custom_headers={})
        made.append(OpenAIProvider(offline, model, model_cfg=model_cfg))
        return made[-1]

    user = None
    if turn.user is not None:
        from ..sessions import messages as msgs

        user = msgs.user_message("")
        user["content"] = copy.deepcopy(turn.user.get("content") or [])
    try:
        async with scope:  # the mock's clients of an in-place replay, closed with the turn
            return await engine.run_turn(
                session,
                user,
                on_event=on_event,
                provider=turn.provider,
                model=turn.model,
                on_tool_call=hook,
                client=scripted,
                offline=True,  # the context window from a list asked earlier, pruning as the turn had
                record=False,
            )
    finally:
        for client in made:
            await client.aclose()


def reviewed_calls(turn: RecordedTurn) -> Any:
    """For a turn recorded in step mode, an on_tool_call hook doing again what the person did; else None."""
    from ..engine.toolhook import ToolDecision

    decisions: dict[tuple[int, int], ToolDecision] = {}
    for call in turn.calls:
        if call.action == "edited":
            decisions[(call.step, call.position)] = ToolDecision.edit(call.arguments)
        elif call.action in ("skipped", "mocked", "refused"):
            decisions[(call.step, call.position)] = ToolDecision.mock(call.result)
    if not decisions:
        return None
    seen: dict[int, int] = {}

    async def again(call: dict, step: int) -> ToolDecision | None:
        position = seen.get(step, 0)
        seen[step] = position + 1
        return decisions.get((step, position))

    return again


def _compare(
    turn: RecordedTurn, events: list[dict], invalid: dict[tuple[int, int], str], mcp: str
) -> list[ReplayedStep]:
    from ..mcp.naming import server_of

    replayed: dict[int, list[tuple[dict, dict]]] = {}
    for event in events:
        if event.get("type") == "result" and event["call"].get("id") != END_CALL_ID:
            replayed.setdefault(event["step"], []).append((event["call"], event["result"].data))
    recorded = {s.n: s.calls for s in turn.steps}
    out = []
    for n in sorted(set(recorded) | set(replayed)):
        step = ReplayedStep(n)
        old, new = recorded.get(n, []), replayed.get(n, [])
        for position in range(max(len(old), len(new))):
            before = old[position] if position < len(old) else None
            after = new[position] if position < len(new) else None
            name = before.name if before else after[0]["name"]
            arguments = before.arguments if before else after[0].get("input")
            step.calls.append(
                ComparedCall(
                    n,
                    position,
                    name,
                    arguments,
                    before.result if before else None,
                    after[1] if after else None,
                    invalid.get((n, position)),
                    mcp if server_of(str(name)) is not None else None,
                )
            )
        out.append(step)
    return out
